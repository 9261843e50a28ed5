import { randomUUID } from "node:crypto";
import type { UIMessage } from "ai";
import type { ProvisionedResource } from "../capabilities/capability-binding.ts";
import { PaiError } from "../errors/pai-error.ts";
import type { CheckpointRecord, ThreadStore } from "../threads/thread-store.ts";
import type { CheckpointBlobStore } from "./checkpoint-blob-store.ts";
import { workspaceManifestBlobs } from "./stored-workspace-manifest.ts";

/** How a runtime checkpoints its threads' resources (`createAgentRuntime({ checkpoints })`). */
export interface CheckpointOptions {
  /**
   * Where the checkpoints' content lives (e.g. `createFileCheckpointStore({ directory: ".pai/checkpoints" })`).
   * @default a folder of the thread store's (`ThreadStore.checkpointDirectory`: `<database file>-checkpoints` for
   * SQLite, under the user's cache folder for Postgres), or a temporary one removed at close for threads in memory
   */
  store?: CheckpointBlobStore;
  /** Checkpoints kept per thread; past it the oldest are dropped. @default 20 */
  keep?: number;
  /** Bytes a thread's checkpoints may add to the store in all; past it the oldest are dropped. @default 1 GiB */
  maxBytesPerThread?: number;
  /** How long one checkpoint may take before it is given up (the run is not held longer). @default 60000 */
  timeoutMs?: number;
  /**
   * How often the runtime removes the blobs no checkpoint references any more (dropped by retention or a rewind, or
   * of deleted threads), from the runtime's maintenance pass. @default 600000 (10 minutes)
   */
  collectIntervalMs?: number;
}

const DEFAULT_KEEP = 20;
const DEFAULT_MAX_BYTES_PER_THREAD = 1024 ** 3;
const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_COLLECT_INTERVAL_MS = 600_000;
/** Manifests whose blob lists a runtime remembers between collections (each list at most 100,001 digests). */
const maxRememberedManifests = 2000;

/** What {@link createThreadCheckpoints} needs of the runtime. */
export interface ThreadCheckpointsOptions extends CheckpointOptions {
  store: CheckpointBlobStore;
  threads: ThreadStore;
  /** A checkpoint that failed (the run's result is not changed by it). */
  onError: (error: unknown) => void;
}

/** The resources a run used, each with how to checkpoint it. */
export type CheckpointedResource = { capability: string; resource: ProvisionedResource };

/** Takes a thread's checkpoints when its runs end, and keeps their number and bytes within bounds. */
export interface ThreadCheckpoints {
  /**
   * Records a checkpoint of each of `resources` that can be checkpointed, keyed by the thread's last message; then
   * drops the oldest past the retention. A failure is reported, never thrown: the run already ended.
   */
  afterRun(
    threadId: string,
    messages: readonly UIMessage[],
    resources: readonly CheckpointedResource[],
  ): Promise<void>;
  /** How often {@link collect} is to run. */
  readonly collectIntervalMs: number;
  /**
   * Removes from the blob store every blob that no checkpoint record in the thread store references (of any thread,
   * taken by any process sharing the store); resolves to what was freed. A checkpoint whose manifest cannot be read
   * is reported and its blobs are not counted as kept (it cannot be restored anyway). Blobs a checkpoint being taken
   * right now stores are spared by the store (`collectAfterMs`).
   */
  collect(signal: AbortSignal): Promise<{ blobs: number; bytes: number }>;
}

/** Checkpoints taken into `options.store`, recorded in `options.threads`. */
export function createThreadCheckpoints(options: ThreadCheckpointsOptions): ThreadCheckpoints {
  const keep = positiveInteger(options.keep ?? DEFAULT_KEEP, "checkpoints.keep");
  const maxBytes = positiveInteger(
    options.maxBytesPerThread ?? DEFAULT_MAX_BYTES_PER_THREAD,
    "checkpoints.maxBytesPerThread",
  );
  const timeoutMs = positiveInteger(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, "checkpoints.timeoutMs");
  const collectIntervalMs = positiveInteger(
    options.collectIntervalMs ?? DEFAULT_COLLECT_INTERVAL_MS,
    "checkpoints.collectIntervalMs",
  );
  /** The blobs of manifests expanded before: a manifest's blobs never change (it is named by its digest). */
  const manifestBlobs = new Map<string, readonly string[]>();

  async function takeOne(threadId: string, messageId: string, entry: CheckpointedResource): Promise<void> {
    const checkpoints = entry.resource.checkpoints;
    if (!checkpoints) return;
    const taken = await checkpoints.take({ store: options.store, signal: AbortSignal.timeout(timeoutMs) });
    const record: CheckpointRecord = {
      id: randomUUID(),
      threadId,
      messageId,
      capability: entry.capability,
      manifestDigest: taken.manifestDigest,
      files: taken.files,
      totalBytes: taken.totalBytes,
      bytesAdded: taken.bytesAdded,
      createdAt: Date.now(),
    };
    await options.threads.putCheckpoint(record);
  }

  /** Drops the thread's oldest checkpoints past `keep` (per capability) or past the byte budget. */
  async function retain(threadId: string): Promise<void> {
    const all = await options.threads.listCheckpoints(threadId);
    const dropped = new Set<string>();
    const byCapability = Map.groupBy(all, (checkpoint) => checkpoint.capability);
    for (const list of byCapability.values()) {
      for (const checkpoint of list.slice(0, Math.max(0, list.length - keep))) dropped.add(checkpoint.id);
    }
    let bytes = all.filter((c) => !dropped.has(c.id)).reduce((sum, c) => sum + c.bytesAdded, 0);
    for (const checkpoint of all) {
      if (bytes <= maxBytes) break;
      if (dropped.has(checkpoint.id)) continue;
      // the newest of a capability always stays: it is what the next checkpoint builds on
      const newest = byCapability.get(checkpoint.capability)?.at(-1);
      if (newest?.id === checkpoint.id) continue;
      dropped.add(checkpoint.id);
      bytes -= checkpoint.bytesAdded;
    }
    if (dropped.size > 0) await options.threads.deleteCheckpoints(threadId, [...dropped]);
  }

  /** Adds the blobs of each manifest in `digests` to `keep`. */
  async function expand(digests: Iterable<string>, keep: Set<string>, signal: AbortSignal): Promise<void> {
    for (const manifestDigest of digests) {
      let blobs = manifestBlobs.get(manifestDigest);
      if (!blobs) {
        try {
          blobs = [...(await workspaceManifestBlobs({ store: options.store, manifestDigest, signal }))];
        } catch (error) {
          // Only a checkpoint that cannot be restored is passed over; any other failure stops the collection.
          if (!PaiError.isInstance(error) || (error.code !== "NOT_FOUND" && error.code !== "STORE_CORRUPT"))
            throw error;
          options.onError(error);
          continue;
        }
        if (manifestBlobs.size >= maxRememberedManifests) manifestBlobs.clear();
        manifestBlobs.set(manifestDigest, blobs);
      }
      for (const blob of blobs) keep.add(blob);
    }
  }

  return {
    collectIntervalMs,

    async collect(signal) {
      const keep = new Set<string>();
      const expanded = new Set<string>();
      // Listed again until no new checkpoint appeared while manifests were read, so the collection starts right after
      // a listing: the blobs of a checkpoint recorded after it were stored (or found) just before, and are too young
      // for the store to remove.
      for (;;) {
        const fresh = (await options.threads.listCheckpointDigests()).filter(
          (digest) => !expanded.has(digest),
        );
        if (fresh.length === 0) break;
        await expand(fresh, keep, signal);
        for (const digest of fresh) expanded.add(digest);
      }
      return options.store.collect(keep, { signal });
    },

    async afterRun(threadId, messages, resources) {
      const messageId = messages.at(-1)?.id;
      const checkpointed = resources.filter((entry) => entry.resource.checkpoints);
      if (messageId === undefined || checkpointed.length === 0) return;
      const outcomes = await Promise.allSettled(
        checkpointed.map((entry) => takeOne(threadId, messageId, entry)),
      );
      for (const outcome of outcomes) if (outcome.status === "rejected") options.onError(outcome.reason);
      await retain(threadId).catch(options.onError);
    },
  };
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 1)
    throw new PaiError("INVALID_ARGUMENT", `${name} is a whole number of at least 1, not ${value}`);
  return value;
}
