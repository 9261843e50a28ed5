import type { ManifestEntry } from "@pai/core";
import { describe, expect, it } from "vitest";
import { SandboxError } from "../sandbox-error.ts";
import {
  decodeCheckpointPaths,
  decodeCheckpointRecords,
  encodeCheckpointPaths,
  encodeCheckpointRecords,
} from "./checkpoint-records.ts";

const isProtocolError = (error: unknown) => SandboxError.hasCode(error, "SANDBOX_PROTOCOL");

describe("checkpoint records", () => {
  it("round-trips files, directories and symlinks, names with spaces, newlines and non-ASCII included", () => {
    const entries: ManifestEntry[] = [
      { path: "a dir", type: "directory", mode: 0o750 },
      { path: "a dir/ü\nline.txt", type: "file", mode: 0o644, size: 12, digest: "b".repeat(64) },
      { path: "link", type: "symlink", target: "../outside" },
    ];
    expect(decodeCheckpointRecords(encodeCheckpointRecords(entries))).toEqual(entries);
    expect(decodeCheckpointRecords(encodeCheckpointRecords([]))).toEqual([]);
    expect(decodeCheckpointPaths(encodeCheckpointPaths(["x", "y z"]))).toEqual(["x", "y z"]);
    expect(decodeCheckpointPaths(encodeCheckpointPaths([]))).toEqual([]);
  });

  it("refuses records that are cut short, of an unknown type, not UTF-8 or with non-numeric modes", () => {
    const bad = [
      Buffer.from("f\0a\x220\0"),
      Buffer.from("x\0a\0"),
      Buffer.from("d\0a\0rw\0"),
      Buffer.from("d\0a\x220"),
      Buffer.concat([Buffer.from("d\0"), Buffer.from([0xff, 0xfe]), Buffer.from("\x220\0")]),
    ];
    for (const block of bad)
      expect(() => decodeCheckpointRecords(block)).toThrow(expect.toSatisfy(isProtocolError));
    expect(() => decodeCheckpointPaths(Buffer.from("a\0b"))).toThrow(expect.toSatisfy(isProtocolError));
  });
});
