import { createHash } from "node:crypto";
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import tar from "tar-stream";

/** How to build one of PAI's images: the build context a package ships. */
export interface ImageRecipe {
  /**
   * The image's name: it is tagged `pai/<name>:<12 hex>` (a hash of the context and the base) and
   * `pai/<name>:latest`, and labelled `pai.image=<name>`.
   */
  name: string;
  /** The build context's folder: a `Dockerfile` at its root whose `FROM` takes `ARG BASE_IMAGE`. */
  contextDirectory: string;
}

/** One regular file of a build context. */
export interface ImageContextFile {
  /** Its path in the context, `./`-prefixed (`./Dockerfile`). */
  path: string;
  content: Buffer;
  mode: number;
}

async function walk(root: string, relative: string, found: ImageContextFile[]): Promise<void> {
  for (const entry of await readdir(join(root, relative), { withFileTypes: true })) {
    const path = relative === "" ? entry.name : `${relative}/${entry.name}`;
    if (entry.isDirectory()) await walk(root, path, found);
    else if (entry.isFile()) {
      const full = join(root, path);
      found.push({ path: `./${path}`, content: await readFile(full), mode: (await stat(full)).mode & 0o777 });
    }
  }
}

/** The regular files of a build context, sorted by path (byte order). */
export async function readImageContext(contextDirectory: string): Promise<ImageContextFile[]> {
  const found: ImageContextFile[] = [];
  await walk(contextDirectory, "", found);
  return found.sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
}

/** `sha256sum`'s lines for the files (`<hex>  ./Dockerfile`), one per file, each ending in a newline. */
export function contextDigestLines(files: readonly ImageContextFile[]): string {
  return files
    .map((file) => `${createHash("sha256").update(file.content).digest("hex")}  ${file.path}\n`)
    .join("");
}

/** The files as the tar stream the Engine API's build takes. */
export function packImageContext(files: readonly ImageContextFile[]): Readable {
  const pack = tar.pack();
  for (const file of files) {
    pack.entry(
      { name: file.path.slice(2), mode: file.mode, size: file.content.length, mtime: new Date(0) },
      file.content,
    );
  }
  pack.finalize();
  return Readable.from(pack);
}
