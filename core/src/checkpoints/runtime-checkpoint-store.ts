import { randomUUID } from "node:crypto";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ThreadStore } from "../threads/thread-store.ts";
import type { CheckpointBlobStore } from "./checkpoint-blob-store.ts";
import { createFileCheckpointStore } from "./file-checkpoint-store.ts";

/** The checkpoint store a runtime uses, and what it does with it when the runtime closes. */
export interface RuntimeCheckpointStore {
  blobs: CheckpointBlobStore;
  /** Removes what only this runtime could use (a temporary folder); nothing for a store the app or a database owns. */
  close(): Promise<void>;
}

/**
 * The store a runtime checkpoints into: the app's (`checkpoints.store`), else a file store in the thread store's
 * own checkpoint folder (`ThreadStore.checkpointDirectory`: beside an SQLite file, under the user's cache for
 * Postgres), else — threads kept in memory — a temporary folder that goes with the runtime.
 */
export function runtimeCheckpointStore(
  appStore: CheckpointBlobStore | undefined,
  threads: ThreadStore,
): RuntimeCheckpointStore {
  if (appStore) return { blobs: appStore, close: async () => {} };
  if (threads.checkpointDirectory !== undefined) {
    return {
      blobs: createFileCheckpointStore({ directory: threads.checkpointDirectory }),
      close: async () => {},
    };
  }
  const directory = join(tmpdir(), `pai-checkpoints-${randomUUID()}`);
  return {
    blobs: createFileCheckpointStore({ directory }),
    close: () => rm(directory, { recursive: true, force: true }),
  };
}
