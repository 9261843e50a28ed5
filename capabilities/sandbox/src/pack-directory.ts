import { createReadStream } from "node:fs";
import { lstat, readdir, readlink } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import tar from "tar-stream";
import type { TarHeaderInput } from "./transform-tar.ts";

/**
 * A tar stream of a host directory's contents (names relative to it): files, directories and symlinks (kept
 * as links, not followed); sockets, devices and fifos are skipped. Streams file bodies; reads lazily.
 */
export function packDirectory(directory: string, options: { signal?: AbortSignal } = {}): Readable {
  const pack = tar.pack();

  async function add(relative: string): Promise<void> {
    options.signal?.throwIfAborted();
    const absolute = relative === "" ? directory : join(directory, relative);
    const info = await lstat(absolute);
    const common = { mode: info.mode & 0o7777, mtime: info.mtime };
    if (info.isDirectory()) {
      if (relative !== "") await entry({ ...common, name: `${relative}/`, type: "directory" });
      const names = (await readdir(absolute)).sort();
      for (const name of names) await add(relative === "" ? name : `${relative}/${name}`);
    } else if (info.isSymbolicLink()) {
      await entry({ ...common, name: relative, type: "symlink", linkname: await readlink(absolute) });
    } else if (info.isFile()) {
      await new Promise<void>((resolve, reject) => {
        const sink = pack.entry({ ...common, name: relative, type: "file", size: info.size }, (error) =>
          error ? reject(error) : resolve(),
        );
        const body = createReadStream(absolute);
        body.on("error", reject);
        body.pipe(sink as unknown as NodeJS.WritableStream);
      });
    }
  }

  function entry(header: TarHeaderInput): Promise<void> {
    return new Promise((resolve, reject) => {
      pack.entry(header, (error) => (error ? reject(error) : resolve()));
    });
  }

  void (async () => {
    try {
      const root = await lstat(directory);
      if (!root.isDirectory()) throw new Error(`${directory} is not a directory`);
      await add("");
      pack.finalize();
    } catch (error) {
      pack.destroy(error as Error);
    }
  })();
  return Readable.from(pack);
}
