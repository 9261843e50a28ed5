// Builds the published packages to what users install: `src/` -> `dist/` JavaScript and declarations.
//   node scripts/build-packages.ts [package folder ...]     (default: every published package)
// Runs `tsc -b` on each package's tsconfig.build.json (its @pai dependencies first, incrementally: an unchanged
// package is not compiled again), then makes the declarations' relative imports end in `.js` as the JavaScript's do
// (tsc rewrites `.ts` specifiers in emitted JavaScript only). Run by `npm install` (the root's `prepare`), by each
// package's `prepack`, and by `npm run build`.
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { execa } from "execa";

/** The published packages, in no particular order: `tsc -b` follows their references. */
export const publishedPackages = [
  "errors",
  "core",
  "pool",
  "capabilities/container-agent",
  "capabilities/docker-binding",
  "capabilities/sandbox",
  "capabilities/browser",
  "react",
  "mcp",
] as const;

const root = resolve(import.meta.dirname, "..");

/** A relative module specifier ending in `.ts`/`.tsx` (not `.d.ts`), in `from "…"` or `import("…")`. */
const tsSpecifier = /((?:from|import)\s*\(?\s*["'])(\.\.?\/[^"']*?)(?<!\.d)\.tsx?(["'])/g;

async function* declarationFiles(directory: string): AsyncGenerator<string> {
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) yield* declarationFiles(path);
    else if (entry.name.endsWith(".d.ts")) yield path;
  }
}

async function rewriteDeclarationImports(packageDirectory: string): Promise<void> {
  for await (const file of declarationFiles(join(packageDirectory, "dist"))) {
    const text = await readFile(file, "utf8");
    const rewritten = text.replace(tsSpecifier, "$1$2.js$3");
    if (rewritten !== text) await writeFile(file, rewritten);
  }
}

const requested = process.argv.slice(2);
const packages = requested.length > 0 ? requested : [...publishedPackages];
const tsc = join(root, "node_modules", ".bin", "tsc");
await execa(tsc, ["-b", ...packages.map((dir) => join(root, dir, "tsconfig.build.json"))], {
  stdio: "inherit",
  cwd: root,
});
// `tsc -b` also (re)builds the references of the packages asked for: rewrite theirs too.
for (const dir of publishedPackages) await rewriteDeclarationImports(join(root, dir));
