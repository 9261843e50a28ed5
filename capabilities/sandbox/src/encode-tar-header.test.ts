import { Readable } from "node:stream";
import { execaSync } from "execa";
import tar, { type Header } from "tar-stream";
import { describe, expect, it } from "vitest";
import { type EncodableTarHeader, encodeTarHeader, tarPadding } from "./encode-tar-header.ts";

/** An archive of the given entries (file bodies as given), ended by two zero blocks. */
function archiveOf(entries: Array<EncodableTarHeader & { body?: string }>): Buffer {
  const parts: Buffer[] = [];
  for (const { body, ...header } of entries) {
    const content = Buffer.from(body ?? "");
    parts.push(
      encodeTarHeader({ ...header, size: content.length }),
      content,
      Buffer.alloc(tarPadding(content.length)),
    );
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

async function read(archive: Buffer): Promise<Array<{ header: Header; body: string }>> {
  const extract = tar.extract();
  Readable.from([archive]).pipe(extract as unknown as NodeJS.WritableStream);
  const out: Array<{ header: Header; body: string }> = [];
  for await (const entry of extract) {
    const chunks: Buffer[] = [];
    for await (const chunk of entry as AsyncIterable<Buffer>) chunks.push(chunk);
    out.push({ header: entry.header, body: Buffer.concat(chunks).toString() });
  }
  return out;
}

/** The records of the PAX extended header that starts `block`, each checked against its declared length. */
function paxRecords(block: Buffer): Record<string, string> {
  expect(String.fromCharCode(block[156] ?? 0)).toBe("x");
  const size = Number.parseInt(block.subarray(124, 135).toString("latin1"), 8);
  let rest = block.subarray(512, 512 + size);
  const records: Record<string, string> = {};
  while (rest.length > 0) {
    const space = rest.indexOf(0x20);
    const length = Number(rest.subarray(0, space).toString());
    const record = rest.subarray(0, length).toString();
    expect(record.endsWith("\n")).toBe(true);
    const [key, ...value] = record.slice(space + 1, -1).split("=");
    records[key ?? ""] = value.join("=");
    rest = rest.subarray(length);
  }
  return records;
}

describe("encodeTarHeader", () => {
  it("writes ustar entries that tar-stream and GNU tar read back", async () => {
    const mtime = new Date("2024-05-06T07:08:09Z");
    const archive = archiveOf([
      { name: "src", type: "directory", mode: 0o755, uid: 1000, gid: 1000, mtime },
      { name: "src/main.py", type: "file", mode: 0o644, uid: 1000, gid: 1000, mtime, body: "print(42)\n" },
      { name: "src/link.py", type: "symlink", linkname: "main.py", mode: 0o777, mtime },
      { name: "src/hard.py", type: "link", linkname: "src/main.py", mode: 0o644, mtime },
    ]);
    const entries = await read(archive);
    expect(
      entries.map(({ header }) => [header.name, header.type, header.mode, header.uid, header.linkname]),
    ).toEqual([
      ["src/", "directory", 0o755, 1000, null],
      ["src/main.py", "file", 0o644, 1000, null],
      ["src/link.py", "symlink", 0o777, 0, "main.py"],
      ["src/hard.py", "link", 0o644, 0, "src/main.py"],
    ]);
    expect(entries[1]?.body).toBe("print(42)\n");
    expect(entries[1]?.header.mtime).toEqual(mtime);
    const listing = execaSync("tar", ["-tv", "--numeric-owner", "-f", "-"], { input: archive }).stdout;
    expect(listing).toMatch(/^-rw-r--r-- 1000\/1000 +10 2024-05-06 \d\d:\d\d src\/main\.py$/m);
    expect(listing).toMatch(/ src\/link\.py -> main\.py$/m);
  });

  it("splits a long path into ustar's prefix and name fields when it can", async () => {
    const name = `${"a".repeat(120)}/${"b".repeat(90)}.txt`;
    const header = encodeTarHeader({ name, type: "file", size: 0 });
    expect(header.length).toBe(512);
    expect((await read(archiveOf([{ name, type: "file" }])))[0]?.header.name).toBe(name);
  });

  it("writes PAX records for paths and link targets ustar cannot hold", async () => {
    const long = `${"c".repeat(170)}/${"d".repeat(120)}`;
    const unicode = "ünïcödé/名前.py";
    const target = `../${"t".repeat(140)}`;
    const block = encodeTarHeader({ name: long, type: "symlink", linkname: target });
    expect(paxRecords(block)).toEqual({ path: long, linkpath: target });
    const entries = await read(
      archiveOf([
        { name: long, type: "symlink", linkname: target },
        { name: unicode, type: "file", body: "x" },
      ]),
    );
    expect(entries.map(({ header }) => [header.name, header.linkname])).toEqual([
      [long, target],
      [unicode, null],
    ]);
    const listing = execaSync("tar", ["-t", "-f", "-"], {
      input: archiveOf([{ name: unicode, type: "file" }]),
      stripFinalNewline: false,
    });
    expect(listing.stdout).toBe(`${unicode}\n`);
  });

  it("counts every PAX record's own length, also where it gains a digit", () => {
    // non-ASCII names go to PAX at any length: records around 99/100 and 999/1000 bytes
    for (const length of [85, 86, 87, 88, 89, 90, 985, 986, 987, 988, 989, 990]) {
      const name = `ü${"n".repeat(length)}`;
      expect(paxRecords(encodeTarHeader({ name, type: "file" })).path).toBe(name);
    }
  });

  it("moves a size over 8 GiB into a PAX record", () => {
    const size = 9 * 1024 ** 3;
    expect(paxRecords(encodeTarHeader({ name: "huge.bin", type: "file", size })).size).toBe(String(size));
  });
});
