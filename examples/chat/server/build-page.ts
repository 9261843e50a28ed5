import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
/** `examples/chat`. */
export const chatRoot = join(here, "..");
/** Where `vite build` writes the page. */
export const pageDist = join(chatRoot, "dist");

/** What the built page depends on: its sources, `@pai/react` and the Vite config. */
const sources = [
  join(chatRoot, "page"),
  join(chatRoot, "..", "..", "react", "src"),
  join(chatRoot, "vite.config.ts"),
];

/**
 * Builds the page with Vite when `dist` is missing or older than any of its sources; otherwise does nothing.
 * Resolves with whether it built.
 */
export async function ensurePageBuilt(
  options: { force?: boolean; log?: (line: string) => void } = {},
): Promise<boolean> {
  const built = await mtime(join(pageDist, "index.html"));
  if (!options.force && built !== undefined && built >= (await newestSource())) return false;
  options.log?.(
    built === undefined ? "building the page (first run)" : "rebuilding the page (sources changed)",
  );
  const { build } = await import("vite");
  await build({ configFile: join(chatRoot, "vite.config.ts"), logLevel: "warn" });
  return true;
}

async function newestSource(): Promise<number> {
  let newest = 0;
  for (const source of sources) newest = Math.max(newest, await newestIn(source));
  return newest;
}

async function newestIn(path: string): Promise<number> {
  const info = await stat(path).catch(() => undefined);
  if (!info) return 0;
  if (!info.isDirectory()) return info.mtimeMs;
  let newest = info.mtimeMs;
  for (const entry of await readdir(path)) {
    if (entry === "node_modules" || entry.startsWith(".")) continue;
    newest = Math.max(newest, await newestIn(join(path, entry)));
  }
  return newest;
}

async function mtime(path: string): Promise<number | undefined> {
  return (await stat(path).catch(() => undefined))?.mtimeMs;
}
