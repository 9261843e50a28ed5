// A package's `prepack` and `postpack` (run by `npm pack` and `npm publish` in the package's folder):
//   node ../scripts/pack-manifest.ts prepack    build it, add the LICENSE, and drop what only the repo uses
//   node ../scripts/pack-manifest.ts postpack   put the package folder back as it was
// In the repo, every export has an `@pai/source` condition pointing at `src/*.ts`, so the repo's tools (tsc's
// customConditions, Vitest, `node --conditions=@pai/source`) run the sources. What is published points at `dist/`
// only: prepack removes those conditions from package.json (kept aside as package.json.repo), postpack restores it.
import { copyFile, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join, relative, resolve } from "node:path";
import { execa } from "execa";

const packageDirectory = process.cwd();
const root = resolve(import.meta.dirname, "..");
const manifestPath = join(packageDirectory, "package.json");
const keptManifestPath = join(packageDirectory, "package.json.repo");
const licensePath = join(packageDirectory, "LICENSE");

type Exports = Record<string, string | Record<string, string>>;

/** The manifest as published: no condition names a source file. */
function publishedManifest(manifest: { exports?: Exports }) {
  const exports: Exports = {};
  for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
    exports[subpath] =
      typeof target === "string"
        ? target
        : Object.fromEntries(Object.entries(target).filter(([condition]) => condition !== "@pai/source"));
  }
  return { ...manifest, exports };
}

/** Puts back the repo's manifest if a pack that failed left the published one in place. */
async function restoreManifest(): Promise<void> {
  await rename(keptManifestPath, manifestPath).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "ENOENT") throw error;
  });
}

const step = process.argv[2];
if (step === "prepack") {
  await restoreManifest();
  const text = await readFile(manifestPath, "utf8");
  const manifest = JSON.parse(text);
  const node = process.execPath;
  // A clean build: nothing a removed source left in dist/ gets published.
  await rm(join(packageDirectory, "dist"), { recursive: true, force: true });
  await rm(join(packageDirectory, ".tsbuildinfo"), { force: true });
  // What the builds print goes to stderr: `npm pack --json` prints its answer on stdout.
  const toStderr = { stdio: ["ignore", 2, 2] } as const;
  await execa(node, [join(root, "scripts", "build-packages.ts"), relative(root, packageDirectory)], toStderr);
  if (manifest.scripts?.["build:native"]) {
    await execa("npm", ["run", "--silent", "build:native"], { ...toStderr, cwd: packageDirectory });
  }
  await copyFile(join(root, "LICENSE"), licensePath);
  await writeFile(keptManifestPath, text);
  await writeFile(manifestPath, `${JSON.stringify(publishedManifest(manifest), null, 2)}\n`);
} else if (step === "postpack") {
  await restoreManifest();
  await rm(licensePath, { force: true });
} else {
  throw new Error(`usage: pack-manifest.ts prepack|postpack (got ${step})`);
}
