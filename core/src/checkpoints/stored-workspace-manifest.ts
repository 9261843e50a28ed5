import { createHash } from "node:crypto";
import { PaiError } from "../errors/pai-error.ts";
import type { CheckpointBlobStore, ManifestEntry, WorkspaceManifest } from "./checkpoint-blob-store.ts";
import {
  canonicalEntry,
  canonicalManifestEntries,
  checkManifestEntries,
  maxManifestEntries,
} from "./workspace-manifest.ts";

/**
 * A manifest is stored as a root blob listing chunk blobs, each a run of its sorted entries. A chunk ends after an
 * entry whose path hashes to 0 modulo `chunkSpread` (or at `maxChunkEntries`), so chunk boundaries depend only on the
 * paths around them: one changed file changes one chunk and the root, not the whole manifest.
 */
const chunkSpread = 32;
const maxChunkEntries = 256;
/** No chunk (256 entries of at most a 4 KiB path and target each) or root (chunks × 67 bytes) is larger than this. */
const maxStoredBytes = 8 * 1024 * 1024;
const digestPattern = /^[0-9a-f]{64}$/;
/** Chunks a load reads at once. */
const parallelReads = 16;

/** What storing a manifest added. */
export interface StoredWorkspaceManifest {
  /** The root blob's digest: the checkpoint's identity. */
  manifestDigest: string;
  /** Bytes of the chunks and root the store did not hold yet. */
  bytesAdded: number;
}

/**
 * Stores `manifest` in `store` (checked, canonical) and returns its digest; only chunks the store lacks are written.
 * @throws PaiError `INVALID_ARGUMENT` for a manifest that does not pass `checkManifestEntries`.
 */
export async function storeWorkspaceManifest(options: {
  store: CheckpointBlobStore;
  manifest: WorkspaceManifest;
  signal?: AbortSignal | undefined;
}): Promise<StoredWorkspaceManifest> {
  const { store, signal } = options;
  const chunks = chunkEntries(canonicalManifestEntries(options.manifest)).map((entries) =>
    encode({ entries }),
  );
  const chunkDigests = chunks.map(sha256);
  const root = encode({ version: 1, chunks: chunkDigests });
  const manifestDigest = sha256(root);
  const present = await store.has([...new Set([...chunkDigests, manifestDigest])]);
  let bytesAdded = 0;
  const written = new Set<string>();
  for (const [index, chunk] of chunks.entries()) {
    const digest = chunkDigests[index]!;
    if (present.has(digest) || written.has(digest)) continue;
    bytesAdded += (await store.put(chunk, { signal })).bytes;
    written.add(digest);
  }
  if (!present.has(manifestDigest)) bytesAdded += (await store.put(root, { signal })).bytes;
  return { manifestDigest, bytesAdded };
}

/**
 * The manifest `manifestDigest` names, read from `store` and checked.
 * @throws PaiError `NOT_FOUND` when the store lacks its root or a chunk, `STORE_CORRUPT` when they are not a manifest.
 */
export async function loadWorkspaceManifest(options: {
  store: CheckpointBlobStore;
  manifestDigest: string;
  signal?: AbortSignal | undefined;
}): Promise<WorkspaceManifest> {
  const { store, manifestDigest, signal } = options;
  const chunkDigests = await readRoot(store, manifestDigest, signal);
  const entries: ManifestEntry[] = [];
  // A few chunks at a time: read side by side, kept in order.
  for (let start = 0; start < chunkDigests.length; start += parallelReads) {
    const batch = chunkDigests.slice(start, start + parallelReads);
    const chunks = await Promise.all(batch.map((digest) => readJson(store, digest, signal)));
    for (const [index, value] of chunks.entries()) {
      const chunk = value as { entries?: unknown } | null;
      if (!Array.isArray(chunk?.entries)) throw corrupt(`chunk ${batch[index]} holds no entries`);
      if (entries.length + chunk.entries.length > maxManifestEntries) throw corrupt("too many entries");
      entries.push(...(chunk.entries as ManifestEntry[]));
    }
  }
  try {
    checkManifestEntries(entries);
  } catch (error) {
    throw corrupt((error as Error).message, error);
  }
  return { version: 1, entries: entries.map(canonicalEntry) };
}

/**
 * Every blob the manifest `manifestDigest` references: its root, its chunks and its files' bytes — what a
 * `collect(keep)` must keep for it.
 */
export async function workspaceManifestBlobs(options: {
  store: CheckpointBlobStore;
  manifestDigest: string;
  signal?: AbortSignal | undefined;
}): Promise<Set<string>> {
  const { store, manifestDigest, signal } = options;
  const manifest = await loadWorkspaceManifest({ store, manifestDigest, signal });
  const blobs = new Set([manifestDigest, ...(await readRoot(store, manifestDigest, signal))]);
  for (const entry of manifest.entries) if (entry.type === "file") blobs.add(entry.digest);
  return blobs;
}

function chunkEntries(entries: readonly ManifestEntry[]): ManifestEntry[][] {
  const chunks: ManifestEntry[][] = [];
  let current: ManifestEntry[] = [];
  for (const entry of entries) {
    current.push(entry);
    const boundary = createHash("sha256").update(entry.path).digest().readUInt32BE(0) % chunkSpread === 0;
    if (boundary || current.length >= maxChunkEntries) {
      chunks.push(current);
      current = [];
    }
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

async function readRoot(store: CheckpointBlobStore, manifestDigest: string, signal: AbortSignal | undefined) {
  const root = (await readJson(store, manifestDigest, signal)) as {
    version?: unknown;
    chunks?: unknown;
  } | null;
  if (root?.version !== 1 || !Array.isArray(root.chunks))
    throw corrupt(`${manifestDigest} is not a manifest`);
  const chunks = root.chunks as unknown[];
  if (!chunks.every((digest) => typeof digest === "string" && digestPattern.test(digest))) {
    throw corrupt(`${manifestDigest} lists a chunk that is not a digest`);
  }
  return chunks as string[];
}

async function readJson(store: CheckpointBlobStore, digest: string, signal: AbortSignal | undefined) {
  signal?.throwIfAborted();
  const blob = await store.get(digest);
  if (!blob)
    throw new PaiError("NOT_FOUND", `no checkpoint blob ${digest} in the store`, { details: { digest } });
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of blob as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxStoredBytes) throw corrupt(`${digest} is too large for a manifest`);
      chunks.push(chunk);
    }
  } finally {
    blob.destroy();
  }
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(Buffer.concat(chunks))) as unknown;
  } catch (error) {
    throw corrupt(`${digest} is not JSON`, error);
  }
}

function encode(value: unknown): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(value));
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function corrupt(what: string, cause?: unknown): PaiError {
  return new PaiError("STORE_CORRUPT", `A checkpoint manifest is invalid: ${what}`, cause ? { cause } : {});
}
