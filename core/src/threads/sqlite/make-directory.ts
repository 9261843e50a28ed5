import { existsSync, mkdirSync, statSync } from "node:fs";
import { dirname } from "node:path";

/**
 * `mkdir -p`, one level at a time. Not `mkdirSync(..., { recursive: true })`: on Node 24 that never
 * returns for a path under `/proc` (each ENOENT makes it retry the parent, which exists).
 */
export function makeDirectory(directory: string): void {
  const missing: string[] = [];
  let current = directory;
  while (!existsSync(current)) {
    missing.unshift(current);
    const parent = dirname(current);
    if (parent === current) break;
    current = parent;
  }
  if (!statSync(current).isDirectory()) throw new Error(`${current} is not a directory`);
  for (const path of missing) {
    try {
      mkdirSync(path);
    } catch (error) {
      // Another process may have created it meanwhile.
      if ((error as NodeJS.ErrnoException).code !== "EEXIST" || !statSync(path).isDirectory()) throw error;
    }
  }
}
