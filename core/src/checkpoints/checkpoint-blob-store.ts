import type { Readable } from "node:stream";

/**
 * Content-addressed storage for checkpoints of a resource's state (a sandbox's `/workspace`): each blob is stored
 * once under the SHA-256 of its bytes, computed by the store itself (a digest a resource claims is never trusted),
 * and shared by every checkpoint (and every fork) that holds the same bytes.
 */
export interface CheckpointBlobStore {
  /** Which of `digests` (lowercase SHA-256 hex) are stored. */
  has(digests: readonly string[]): Promise<Set<string>>;
  /** Stores `bytes` (read to the end) and returns their digest and size; storing the same bytes again is a no-op. */
  put(bytes: Uint8Array | AsyncIterable<Uint8Array>, options?: { signal?: AbortSignal }): Promise<StoredBlob>;
  /** The blob's bytes, or `undefined` when it is not stored. */
  get(digest: string): Promise<Readable | undefined>;
  /**
   * Removes every blob not in `keep` (the digests live checkpoints reference); resolves to what was freed. Stops,
   * rejecting, once `signal` aborts (what was removed until then stays removed).
   */
  collect(
    keep: ReadonlySet<string>,
    options?: { signal?: AbortSignal },
  ): Promise<{ blobs: number; bytes: number }>;
}

/** A blob as the store has it. */
export interface StoredBlob {
  digest: string;
  bytes: number;
}

/** One entry of a {@link WorkspaceManifest}. */
export type ManifestEntry =
  | { path: string; type: "file"; mode: number; size: number; digest: string }
  | { path: string; type: "directory"; mode: number }
  | { path: string; type: "symlink"; target: string };

/**
 * What a checkpoint holds of a resource's state: every file, directory and symlink under its root (paths relative
 * to it, `/`-separated, sorted), files by the digest of their bytes in a {@link CheckpointBlobStore}.
 */
export interface WorkspaceManifest {
  version: 1;
  entries: ManifestEntry[];
}

/** What taking a checkpoint stored and cost. */
export interface TakenCheckpoint {
  /** The digest of the manifest itself, stored as a blob: the checkpoint's identity. */
  manifestDigest: string;
  /** Files and bytes in the checkpoint. */
  files: number;
  totalBytes: number;
  /** Bytes this checkpoint added to the store (new blobs and the manifest): what changed since earlier ones. */
  bytesAdded: number;
  durationMs: number;
}

/** What restoring a checkpoint changed. */
export interface RestoredCheckpoint {
  /** Files written (changed or missing), removed (not in the checkpoint), and bytes copied in. */
  written: number;
  removed: number;
  bytesWritten: number;
  durationMs: number;
}

/** A program a rewind stopped in a resource. */
export interface StoppedProcess {
  /** Its pid in the resource (a container's pid namespace). */
  pid: number;
  /** Its command line, as far as it could be read (at most 200 characters). */
  command: string;
}

/** How the runtime checkpoints a resource (see `ProvisionedResource.checkpoints`). */
export interface ResourceCheckpoints {
  /** Records the resource's state now into `store`; costs in proportion to what changed since the last one. */
  take(options: { store: CheckpointBlobStore; signal: AbortSignal }): Promise<TakenCheckpoint>;
  /**
   * Makes the resource's state the checkpoint's: files written, missing ones added, extra ones removed, modes set.
   * Processes running in it are not touched (the runtime stops them first when it rewinds: {@link stopProcesses}).
   */
  restore(
    manifestDigest: string,
    options: { store: CheckpointBlobStore; signal: AbortSignal },
  ): Promise<RestoredCheckpoint>;
  /**
   * Stops every program running in the resource (what a rewind does before it restores, so that no program of the
   * dropped turns goes on writing into the restored state) and says which. Absent: the resource runs none.
   */
  stopProcesses?(options: { signal: AbortSignal }): Promise<StoppedProcess[]>;
}
