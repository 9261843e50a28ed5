import { createHash, randomUUID } from "node:crypto";
import { utimesSync } from "node:fs";
import { mkdir, open, readdir, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { PaiError } from "../errors/pai-error.ts";
import type { CheckpointBlobStore, StoredBlob } from "./checkpoint-blob-store.ts";

/** Options of {@link createFileCheckpointStore}. */
export interface FileCheckpointStoreOptions {
  /** The folder blobs live in (created on first use); several processes may share it. */
  directory: string;
  /**
   * How old a blob (or a temporary file) must be before `collect` removes it, so a checkpoint another process is
   * taking right now never loses a blob under it: `put` and `has` mark the blobs they see as in use, and a checkpoint
   * is safe when it is recorded within three quarters of this after them.
   * @default 60_000
   */
  collectAfterMs?: number;
}

const digestPattern = /^[0-9a-f]{64}$/;
const temporaryPrefix = ".incoming-";
/** Blobs remembered as recently marked in use, at most (then forgotten at once). */
const maxMarked = 200_000;
/** Blobs `has` looks up between two turns of the event loop. */
const hasBatch = 256;

/**
 * A {@link CheckpointBlobStore} on the local file system: each blob is the file `<directory>/<first 2 hex>/<digest>`.
 * A put writes a temporary file in `directory` while hashing it, syncs it to disk and renames it into place, so a
 * blob is either whole or absent, and several processes may put the same bytes at once. A temporary file a crash
 * left behind is never read and is removed by a later `collect`.
 *
 * @example
 * ```ts
 * const store = createFileCheckpointStore({ directory: ".pai/checkpoints" });
 * const { digest } = await store.put(new TextEncoder().encode("hello"));
 * ```
 */
export function createFileCheckpointStore(options: FileCheckpointStoreOptions): CheckpointBlobStore {
  const { directory } = options;
  const collectAfterMs = options.collectAfterMs ?? 60_000;
  if (!Number.isFinite(collectAfterMs) || collectAfterMs < 0) {
    throw new PaiError(
      "INVALID_ARGUMENT",
      `collectAfterMs must be a non-negative number, not ${collectAfterMs}`,
    );
  }
  const blobPath = (digest: string): string => join(directory, digest.slice(0, 2), digest);
  /**
   * When this store last marked each blob as in use (put, or found by `has`). A blob marked less than a quarter of
   * `collectAfterMs` ago cannot have been collected since (by any process): `has` answers for it without the disk.
   */
  const marked = new Map<string, number>();
  const mark = (digest: string, at: number): void => {
    if (marked.size >= maxMarked) marked.clear();
    marked.set(digest, at);
  };

  return {
    async has(digests) {
      for (const digest of digests) checkDigest(digest);
      const found = new Set<string>();
      const now = new Date();
      const fresh = now.getTime() - collectAfterMs / 4;
      // Synchronous calls in batches (a third of the time of as many threadpool round trips), yielding between them.
      for (let start = 0; start < digests.length; start += hasBatch) {
        if (start > 0) await new Promise((resolve) => setImmediate(resolve));
        for (const digest of digests.slice(start, start + hasBatch)) {
          if ((marked.get(digest) ?? Number.NEGATIVE_INFINITY) > fresh) {
            found.add(digest);
            continue;
          }
          try {
            // Marks the blob as in use, so a concurrent collect spares it while a checkpoint that reuses it is taken.
            utimesSync(blobPath(digest), now, now);
            found.add(digest);
            mark(digest, now.getTime());
          } catch (error) {
            if (!isMissing(error)) throw error;
          }
        }
      }
      return found;
    },

    async put(bytes, putOptions) {
      const signal = putOptions?.signal;
      signal?.throwIfAborted();
      await mkdir(directory, { recursive: true });
      const temporary = join(directory, `${temporaryPrefix}${randomUUID()}`);
      const hash = createHash("sha256");
      let size = 0;
      let placed = false;
      const file = await open(temporary, "wx");
      try {
        try {
          const chunks = bytes instanceof Uint8Array ? [bytes] : bytes;
          for await (const chunk of chunks) {
            signal?.throwIfAborted();
            hash.update(chunk);
            size += chunk.byteLength;
            await file.write(chunk);
          }
          await file.sync();
        } finally {
          await file.close();
        }
        const digest = hash.digest("hex");
        const target = blobPath(digest);
        await mkdir(join(directory, digest.slice(0, 2)), { recursive: true });
        // Same digest, same bytes: replacing a blob another process just placed changes nothing a reader sees.
        await rename(temporary, target);
        placed = true;
        mark(digest, Date.now());
        return { digest, bytes: size } satisfies StoredBlob;
      } finally {
        if (!placed) await rm(temporary, { force: true });
      }
    },

    async get(digest): Promise<Readable | undefined> {
      checkDigest(digest);
      try {
        const file = await open(blobPath(digest), "r");
        return file.createReadStream();
      } catch (error) {
        if (isMissing(error)) return undefined;
        throw error;
      }
    },

    async collect(keep, collectOptions) {
      const signal = collectOptions?.signal;
      const freed = { blobs: 0, bytes: 0 };
      const before = Date.now() - collectAfterMs;
      const removeIfOld = async (path: string): Promise<number | undefined> => {
        try {
          const info = await stat(path);
          if (info.mtimeMs > before) return undefined;
          await rm(path, { force: true });
          return info.size;
        } catch (error) {
          if (isMissing(error)) return undefined;
          throw error;
        }
      };
      for (const name of await readdirOrEmpty(directory)) {
        signal?.throwIfAborted();
        if (name.startsWith(temporaryPrefix)) {
          await removeIfOld(join(directory, name));
          continue;
        }
        if (!/^[0-9a-f]{2}$/.test(name)) continue;
        for (const digest of await readdirOrEmpty(join(directory, name))) {
          if (!digestPattern.test(digest) || !digest.startsWith(name) || keep.has(digest)) continue;
          const size = await removeIfOld(join(directory, name, digest));
          if (size === undefined) continue;
          marked.delete(digest);
          freed.blobs += 1;
          freed.bytes += size;
        }
      }
      return freed;
    },
  };
}

function checkDigest(digest: string): void {
  if (typeof digest !== "string" || !digestPattern.test(digest)) {
    throw new PaiError(
      "INVALID_ARGUMENT",
      `A blob digest is 64 lowercase hex characters (SHA-256), not ${JSON.stringify(String(digest).slice(0, 80))}`,
    );
  }
}

async function readdirOrEmpty(path: string): Promise<string[]> {
  try {
    return await readdir(path);
  } catch (error) {
    if (isMissing(error)) return [];
    throw error;
  }
}

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === "ENOENT";
}
