import type { ManifestEntry } from "@pai/core";
import { SandboxError } from "../sandbox-error.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Manifest entries as the checkpoint program reads and writes them: records of NUL-terminated fields
 * (`f path mode size digest`, `d path mode`, `l path target`; numbers in decimal), so the program needs no JSON.
 */
export function encodeCheckpointRecords(entries: readonly ManifestEntry[]): Buffer {
  const fields: string[] = [];
  for (const entry of entries) {
    if (entry.type === "file") fields.push("f", entry.path, `${entry.mode}`, `${entry.size}`, entry.digest);
    else if (entry.type === "directory") fields.push("d", entry.path, `${entry.mode}`);
    else fields.push("l", entry.path, entry.target);
  }
  return Buffer.from(fields.length ? `${fields.join("\0")}\0` : "");
}

/** The entries of a block the program wrote (checked further by `checkManifestEntries`). */
export function decodeCheckpointRecords(block: Buffer): ManifestEntry[] {
  if (block.length > 0 && block[block.length - 1] !== 0) throw malformed("a record that does not end in NUL");
  // NUL is valid UTF-8: the block decodes as a whole exactly when every field does.
  const fields = block.length ? decode(block.subarray(0, -1)).split("\0") : [];
  const entries: ManifestEntry[] = [];
  for (let at = 0; at < fields.length; ) {
    const [type, path = "", third = "", size = "", digest = ""] = fields.slice(at, at + 5);
    if (type === "f") {
      entries.push({ path, type: "file", mode: number(third), size: number(size), digest });
      at += 5;
    } else if (type === "d") {
      entries.push({ path, type: "directory", mode: number(third) });
      at += 3;
    } else if (type === "l") {
      entries.push({ path, type: "symlink", target: third });
      at += 3;
    } else {
      throw malformed(`an unknown record type ${JSON.stringify(type)}`);
    }
    if (at > fields.length) throw malformed("a record is cut short");
  }
  return entries;
}

/** NUL-separated paths (the files a `take` is asked to send, or a `restore` asks for). */
export function encodeCheckpointPaths(paths: readonly string[]): Buffer {
  return Buffer.from(paths.length ? `${paths.join("\0")}\0` : "");
}

/** The paths of a block of NUL-terminated paths. */
export function decodeCheckpointPaths(block: Buffer): string[] {
  if (block.length === 0) return [];
  if (block[block.length - 1] !== 0) throw malformed("a path does not end in NUL");
  return decode(block.subarray(0, -1)).split("\0");
}

function decode(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch (error) {
    throw malformed("a field that is not UTF-8", error);
  }
}

function number(text: string): number {
  if (!/^\d{1,15}$/.test(text)) throw malformed(`${JSON.stringify(text.slice(0, 20))} is not a number`);
  return Number(text);
}

function malformed(what: string, cause?: unknown): SandboxError {
  return new SandboxError("SANDBOX_PROTOCOL", `the checkpoint program wrote ${what}`, cause ? { cause } : {});
}
