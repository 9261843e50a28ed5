import { describe, expect, it } from "vitest";
import { PaiError } from "../errors/pai-error.ts";
import type { WorkspaceManifest } from "./checkpoint-blob-store.ts";
import { canonicalManifestEntries, checkManifestEntries, maxManifestEntries } from "./workspace-manifest.ts";

const digest = "a".repeat(64);

describe("workspace manifest entries", () => {
  it("puts the same workspace in the same canonical form whatever the entry and key order", () => {
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
    expect(JSON.stringify(canonicalManifestEntries(one))).toBe(
      JSON.stringify(canonicalManifestEntries(other)),
    );
    expect(canonicalManifestEntries(one).map((entry) => entry.path)).toEqual(["link", "src", "src/b.ts"]);
  });

  it("refuses paths that climb out, repeat or live under a symlink, and malformed entries", () => {
    const bad = [
      [{ path: "../etc/passwd", type: "directory", mode: 0o755 }],
      [{ path: "/abs", type: "directory", mode: 0o755 }],
      [{ path: "a//b", type: "directory", mode: 0o755 }],
      [{ path: "a", type: "file", mode: 0o644, size: 1, digest: "../x" }],
      [{ path: "a", type: "file", mode: 0o100644, size: 1, digest }],
      [{ path: "a", type: "fifo" }],
      [{ path: "no/parent", type: "directory", mode: 0o755 }],
      [
        { path: "a", type: "symlink", target: "/etc" },
        { path: "a/passwd", type: "file", mode: 0o644, size: 1, digest },
      ],
      [
        { path: "a", type: "directory", mode: 0o755 },
        { path: "a", type: "directory", mode: 0o755 },
      ],
    ];
    for (const entries of bad) {
      expect(() => checkManifestEntries(entries)).toThrow(
        expect.toSatisfy((error) => PaiError.hasCode(error, "INVALID_ARGUMENT")),
      );
    }
  });

  it("holds at most maxManifestEntries entries", () => {
    const entries = Array.from({ length: maxManifestEntries + 1 }, (_, index) => ({
      path: `f${index}`,
      type: "directory" as const,
      mode: 0o755,
    }));
    expect(() => checkManifestEntries(entries)).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
  });
});
