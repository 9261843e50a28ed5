import { PaiError } from "../errors/pai-error.ts";
import type { ManifestEntry, WorkspaceManifest } from "./checkpoint-blob-store.ts";

/** The most entries a {@link WorkspaceManifest} may hold. */
export const maxManifestEntries = 100_000;

const digestPattern = /^[0-9a-f]{64}$/;
const maxPathBytes = 4096;

/**
 * A manifest's entries checked ({@link checkManifestEntries}), in canonical form: keys in a fixed order, sorted by the
 * UTF-8 bytes of their paths, so the same workspace always gives the same stored bytes.
 * @throws PaiError `INVALID_ARGUMENT` for an entry that does not pass.
 */
export function canonicalManifestEntries(manifest: WorkspaceManifest): ManifestEntry[] {
  checkManifestEntries(manifest.entries);
  return manifest.entries
    .map((entry) => ({ key: Buffer.from(entry.path), entry }))
    .sort((a, b) => Buffer.compare(a.key, b.key))
    .map(({ entry }) => canonicalEntry(entry));
}

/** An entry with its keys in canonical order (and nothing else). */
export function canonicalEntry(entry: ManifestEntry): ManifestEntry {
  switch (entry.type) {
    case "file":
      return { path: entry.path, type: "file", mode: entry.mode, size: entry.size, digest: entry.digest };
    case "directory":
      return { path: entry.path, type: "directory", mode: entry.mode };
    case "symlink":
      return { path: entry.path, type: "symlink", target: entry.target };
  }
}

/**
 * Checks a manifest's entries: paths relative, `/`-separated, without `.` or `..` segments, unique, each inside a
 * directory of the manifest; modes permission bits; digests SHA-256 hex; at most {@link maxManifestEntries}.
 * @throws PaiError `INVALID_ARGUMENT` naming the first entry that does not pass.
 */
export function checkManifestEntries(entries: readonly unknown[]): void {
  if (entries.length > maxManifestEntries) {
    throw new PaiError(
      "INVALID_ARGUMENT",
      `A manifest holds at most ${maxManifestEntries} entries, not ${entries.length}`,
    );
  }
  /** Every path, and whether it is a directory. */
  const seen = new Map<string, boolean>();
  for (const value of entries) {
    const entry = value as ManifestEntry;
    const what = `entry ${JSON.stringify(entry?.path)}`;
    if (typeof entry !== "object" || entry === null || !isRelativePath(entry.path)) {
      throw new PaiError(
        "INVALID_ARGUMENT",
        `${what}: a path is relative, /-separated, without . or .. segments`,
      );
    }
    if (seen.has(entry.path)) throw new PaiError("INVALID_ARGUMENT", `${what} appears twice`);
    seen.set(entry.path, entry.type === "directory");
    const mode = (entry as { mode?: unknown }).mode;
    const validMode = Number.isInteger(mode) && (mode as number) >= 0 && (mode as number) <= 0o7777;
    const valid =
      (entry.type === "file" &&
        validMode &&
        Number.isSafeInteger(entry.size) &&
        entry.size >= 0 &&
        typeof entry.digest === "string" &&
        digestPattern.test(entry.digest)) ||
      (entry.type === "directory" && validMode) ||
      (entry.type === "symlink" &&
        typeof entry.target === "string" &&
        entry.target.length > 0 &&
        !entry.target.includes("\0"));
    if (!valid) throw new PaiError("INVALID_ARGUMENT", `${what} is not a valid file, directory or symlink`);
  }
  // An entry lives in a directory of the manifest: never under a symlink, which a restore would follow.
  for (const path of seen.keys()) {
    const slash = path.lastIndexOf("/");
    if (slash >= 0 && seen.get(path.slice(0, slash)) !== true) {
      throw new PaiError(
        "INVALID_ARGUMENT",
        `entry ${JSON.stringify(path)} is not inside a directory of the manifest`,
      );
    }
  }
}

function isRelativePath(path: unknown): path is string {
  if (typeof path !== "string" || path === "" || path.includes("\0")) return false;
  if (Buffer.byteLength(path) > maxPathBytes) return false;
  return path.split("/").every((segment) => segment !== "" && segment !== "." && segment !== "..");
}
