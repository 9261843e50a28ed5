import type { TarHeaderInput } from "./transform-tar.ts";

const BLOCK = 512;
const TYPEFLAGS = { file: "0", link: "1", symlink: "2", directory: "5" } as const;
/** Largest size an 11-digit octal field holds (8 GiB - 1); larger sizes go in a PAX record. */
const MAX_OCTAL_SIZE = 0o77777777777;

/** The entry types {@link encodeTarHeader} writes. */
export type EncodableTarType = keyof typeof TYPEFLAGS;

/** A header {@link encodeTarHeader} can write: one of the plain entry types. */
export type EncodableTarHeader = TarHeaderInput & { type: EncodableTarType };

/** Zero padding to the next 512-byte boundary after `size` bytes of body. */
export function tarPadding(size: number): number {
  return (BLOCK - (size % BLOCK)) % BLOCK;
}

function octal(block: Buffer, value: number, offset: number, width: number): void {
  block.write(
    `${Math.max(0, Math.floor(value))
      .toString(8)
      .padStart(width - 1, "0")}\0`,
    offset,
    width,
    "latin1",
  );
}

function isAscii(text: string): boolean {
  return /^[\x20-\x7e]*$/.test(text);
}

/** `name` split into ustar's prefix (≤ 155 bytes) and name (≤ 100 bytes) fields, or `undefined` if it cannot be. */
function splitName(name: string): { prefix: string; name: string } | undefined {
  if (name.length <= 100) return { prefix: "", name };
  for (let slash = name.indexOf("/"); slash !== -1; slash = name.indexOf("/", slash + 1)) {
    const prefix = name.slice(0, slash);
    const rest = name.slice(slash + 1);
    if (prefix.length > 155) return undefined;
    if (rest.length <= 100 && rest !== "") return { prefix, name: rest };
  }
  return undefined;
}

/** One PAX record, `"<length> <key>=<value>\n"`, where length counts the whole record. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  const bodyBytes = Buffer.byteLength(body);
  let length = bodyBytes + 1;
  while (length !== bodyBytes + String(length).length) length = bodyBytes + String(length).length;
  return `${length}${body}`;
}

function ustarBlock(
  header: EncodableTarHeader,
  fields: { prefix: string; name: string; linkname: string; size: number; typeflag: string },
): Buffer {
  const block = Buffer.alloc(BLOCK);
  block.write(fields.name, 0, 100, "utf8");
  octal(block, (header.mode ?? (header.type === "directory" ? 0o755 : 0o644)) & 0o7777, 100, 8);
  octal(block, header.uid ?? 0, 108, 8);
  octal(block, header.gid ?? 0, 116, 8);
  octal(block, fields.size > MAX_OCTAL_SIZE ? 0 : fields.size, 124, 12);
  octal(block, (header.mtime ?? new Date()).getTime() / 1000, 136, 12);
  block.write(fields.typeflag, 156, 1, "latin1");
  block.write(fields.linkname, 157, 100, "utf8");
  block.write("ustar\u000000", 257, 8, "latin1");
  block.write(header.uname ?? "", 265, 32, "utf8");
  block.write(header.gname ?? "", 297, 32, "utf8");
  octal(block, 0, 329, 8);
  octal(block, 0, 337, 8);
  block.write(fields.prefix, 345, 155, "utf8");
  block.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8, "latin1");
  return block;
}

/**
 * The 512-byte ustar header block of one entry, preceded by a PAX extended header when the name or link target
 * does not fit ustar's fields (longer than 100/155 bytes, or not printable ASCII) or the size exceeds 8 GiB.
 * Directory names get their trailing `/`. The body (files only) and its {@link tarPadding} follow the header.
 */
export function encodeTarHeader(header: EncodableTarHeader): Buffer {
  const name = header.type === "directory" && !header.name.endsWith("/") ? `${header.name}/` : header.name;
  const linkname = header.type === "link" || header.type === "symlink" ? (header.linkname ?? "") : "";
  const size = header.type === "file" ? (header.size ?? 0) : 0;
  const split = isAscii(name) ? splitName(name) : undefined;
  const linkFits = isAscii(linkname) && linkname.length <= 100;
  const typeflag = TYPEFLAGS[header.type];
  const main = ustarBlock(header, {
    prefix: split?.prefix ?? "",
    // readers take the PAX path; the ustar field keeps a printable stand-in
    name: split?.name ?? name.replace(/[^\x20-\x7e]/g, "_").slice(-100),
    linkname: linkFits ? linkname : "",
    size,
    typeflag,
  });
  if (split && linkFits && size <= MAX_OCTAL_SIZE) return main;

  const records = Buffer.from(
    (split ? "" : paxRecord("path", name)) +
      (linkFits ? "" : paxRecord("linkpath", linkname)) +
      (size > MAX_OCTAL_SIZE ? paxRecord("size", String(size)) : ""),
  );
  const extended = ustarBlock(
    { name: "", type: "file", mode: 0o644, mtime: header.mtime ?? new Date() },
    { prefix: "", name: "././@PaxHeader", linkname: "", size: records.length, typeflag: "x" },
  );
  return Buffer.concat([extended, records, Buffer.alloc(tarPadding(records.length)), main]);
}
