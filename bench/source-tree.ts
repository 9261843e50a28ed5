import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** What {@link createSourceTree} made. */
export interface SourceTree {
  /** The tree's root directory. */
  directory: string;
  /** Regular files written. */
  files: number;
  /** Bytes of file content written. */
  bytes: number;
  /** Deletes the tree. */
  close(): void;
}

/** A small deterministic PRNG (mulberry32), so every run builds the same tree. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

const WORDS = [
  "def",
  "return",
  "self",
  "assert",
  "import",
  "class",
  "value",
  "result",
  "for",
  "in",
  "if",
  "else",
  "None",
  "True",
  "False",
  "with",
  "open",
  "test",
  "expected",
  "data",
  "index",
  "len",
  "range",
  "raise",
];

/** One source-like line: indentation and a few words. */
function line(next: () => number): string {
  const indent = "    ".repeat(Math.floor(next() * 3));
  const count = 2 + Math.floor(next() * 9);
  const words: string[] = [];
  for (let i = 0; i < count; i++) words.push(WORDS[Math.floor(next() * WORDS.length)] ?? "x");
  return `${indent}${words.join(" ")}\n`;
}

/**
 * Writes a source tree shaped like a project's test suite under the system temp directory: `files` text files
 * spread over nested packages, sizes log-normally distributed (median ~6 KiB, a few of several hundred KiB)
 * and scaled to about `megabytes` in all, plus a few relative symlinks. Deterministic for a given size.
 */
export function createSourceTree(options: { files: number; megabytes: number }): SourceTree {
  const next = random(0x5eed);
  const directory = mkdtempSync(join(tmpdir(), "pai-bench-tree-"));
  const raw = Array.from({ length: options.files }, () => {
    // Box-Muller: a normal sample, exponentiated
    const normal = Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
    return Math.exp(Math.log(6 * 1024) + 1.3 * normal);
  });
  const scale = (options.megabytes * 1024 * 1024) / raw.reduce((sum, size) => sum + size, 0);
  const packages = Array.from({ length: Math.ceil(options.files / 12) }, (_, i) =>
    i < 10 ? `pkg${i}` : `pkg${i % 10}/sub${Math.floor(i / 10)}${i % 3 === 0 ? `/deep${i}` : ""}`,
  );
  // one long chunk of lines; files are slices of it, so writing stays cheap
  let text = "";
  while (text.length < 2 * 1024 * 1024) text += line(next);
  let bytes = 0;
  for (const [i, size] of raw.entries()) {
    const dir = join(directory, packages[i % packages.length] ?? "pkg0");
    mkdirSync(dir, { recursive: true });
    const length = Math.max(1, Math.min(Math.round(size * scale), text.length));
    const start = Math.floor(next() * (text.length - length));
    writeFileSync(join(dir, `test_${i}.py`), text.slice(start, start + length));
    bytes += length;
  }
  // files i, i + packages.length, ... share packages[i]: link a few of pkg0's
  for (let i = 0; i < 5; i++) {
    symlinkSync(`test_${i * packages.length}.py`, join(directory, "pkg0", `alias_${i}.py`));
  }
  return {
    directory,
    files: options.files,
    bytes,
    close: () => rmSync(directory, { recursive: true, force: true }),
  };
}
