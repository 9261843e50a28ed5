import { describe, expect, it } from "vitest";
import { PaiError } from "../errors/pai-error.ts";
import type { WorkspaceManifest } from "./checkpoint-blob-store.ts";
import { encodeWorkspaceManifest, maxManifestEntries, parseWorkspaceManifest } from "./workspace-manifest.ts";

const digest = "a".repeat(64);
const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

describe("workspace manifests", () => {
  it("encodes the same workspace to the same bytes whatever the entry and key order", () => {
    const one: WorkspaceManifest = {
      version: 1,
      entries: [
        { path: "src/b.ts", type: "file", mode: 0o644, size: 3, digest },
        { path: "src", type: "directory", mode: 0o755 },
        { path: "link", type: "symlink", target: "src/b.ts" },
      ],
    };
    const other = {
      version: 1 as const,
      entries: [
        { type: "symlink" as const, target: "src/b.ts", path: "link" },
        { digest, size: 3, mode: 0o644, type: "file" as const, path: "src/b.ts" },
        { mode: 0o755, type: "directory" as const, path: "src" },
      ],
    };
    expect(decode(encodeWorkspaceManifest(one))).toBe(decode(encodeWorkspaceManifest(other)));
    expect(parseWorkspaceManifest(encodeWorkspaceManifest(one)).entries.map((entry) => entry.path)).toEqual([
      "link",
      "src",
      "src/b.ts",
    ]);
  });

  it("refuses a manifest whose paths climb out, repeat, or whose entries are malformed", () => {
    const bad = [
      { path: "../etc/passwd", type: "directory", mode: 0o755 },
      { path: "/abs", type: "directory", mode: 0o755 },
      { path: "a//b", type: "directory", mode: 0o755 },
      { path: "a", type: "file", mode: 0o644, size: 1, digest: "../x" },
      { path: "a", type: "file", mode: 0o100644, size: 1, digest },
      { path: "a", type: "fifo" },
    ];
    for (const entry of bad) {
      expect(() => parseWorkspaceManifest(encode({ version: 1, entries: [entry] }))).toThrow(
        expect.objectContaining({ code: "STORE_CORRUPT" }),
      );
    }
    const underLink = [
      { path: "a", type: "symlink", target: "/etc" },
      { path: "a/passwd", type: "file", mode: 0o644, size: 1, digest },
    ];
    expect(() => parseWorkspaceManifest(encode({ version: 1, entries: underLink }))).toThrow(PaiError);
    expect(() =>
      parseWorkspaceManifest(
        encode({ version: 1, entries: [{ path: "no/parent", type: "directory", mode: 0o755 }] }),
      ),
    ).toThrow(PaiError);
    const twice = { path: "a", type: "directory", mode: 0o755 };
    expect(() => parseWorkspaceManifest(encode({ version: 1, entries: [twice, twice] }))).toThrow(PaiError);
    expect(() => parseWorkspaceManifest(new TextEncoder().encode("{"))).toThrow(PaiError);
    expect(() => parseWorkspaceManifest(encode({ version: 2, entries: [] }))).toThrow(PaiError);
  });

  it("holds at most maxManifestEntries entries", () => {
    const entries = Array.from({ length: maxManifestEntries + 1 }, (_, index) => ({
      path: `f${index}`,
      type: "directory" as const,
      mode: 0o755,
    }));
    expect(() => encodeWorkspaceManifest({ version: 1, entries })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
  });
});
