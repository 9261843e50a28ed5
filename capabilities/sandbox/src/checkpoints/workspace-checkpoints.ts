import { readFile } from "node:fs/promises";
import {
  checkManifestEntries,
  loadWorkspaceManifest,
  type ManifestEntry,
  PaiError,
  type ResourceCheckpoints,
  storeWorkspaceManifest,
  type WorkspaceManifest,
} from "@pai/core";
import type { CommandExecutor, ExecutorProcess, ExecutorProcessResult } from "../command-executor.ts";
import { SandboxError } from "../sandbox-error.ts";
import {
  decodeCheckpointPaths,
  decodeCheckpointRecords,
  encodeCheckpointPaths,
  encodeCheckpointRecords,
} from "./checkpoint-records.ts";
import { createOutputReader, type OutputReader } from "./output-reader.ts";

/** Options of {@link createWorkspaceCheckpoints}. */
export interface WorkspaceCheckpointsOptions {
  /** How the checkpoint program reaches the container (it runs as the sandbox user, like every program). */
  executor: CommandExecutor;
  /** @default "/workspace" */
  workspace?: string;
  /**
   * Where the program remembers what it hashed (outside the workspace, so no checkpoint holds it). A program in the
   * sandbox may change it: that can only make this sandbox's own checkpoints wrong, since the store hashes every
   * byte it keeps.
   * @default "/tmp/.pai-checkpoint"
   */
  cachePath?: string;
}

/**
 * The checkpoint program, shipped in this package's `checkpoint/` folder (found from `src/checkpoints/` here and
 * from `dist/checkpoints/` once built).
 */
const programFile = new URL("../../checkpoint/workspace-checkpoint.py", import.meta.url);
let program: Promise<string> | undefined;
function checkpointProgram(): Promise<string> {
  if (!program) {
    program = readFile(programFile, "utf8");
    program.catch(() => {
      program = undefined;
    });
  }
  return program;
}

/** Frames of at most this many bytes; a length of 0 ends a file, `failedFrame` says it could not be read. */
const frameBytes = 256 * 1024;
const failedFrame = 0xffffffff;
/** The program sends at most 8 MiB past the last acknowledgement: acknowledge every 1 MiB stored. */
const ackEvery = 1024 * 1024;
/** A block of 100,000 entries stays well under this. */
const maxBlockBytes = 64 * 1024 * 1024;

/**
 * Checkpoints of a sandbox's workspace into a {@link CheckpointBlobStore}. `take` has a program in the container walk
 * the workspace and print its manifest (hashing only files changed since its last walk), then fetches exactly the
 * files the store lacks, streamed through the program's stdout with bounded memory, each checked against the
 * digest the manifest claims. `restore` sends the manifest to the program, which removes what it lacks, makes
 * directories and symlinks, sets modes and asks for the files that are missing or differ; those are streamed from
 * the store to it. Symlinks are recorded, never followed; other special files are skipped, as are names that are not
 * UTF-8 (neither recorded nor removed).
 */
export function createWorkspaceCheckpoints(options: WorkspaceCheckpointsOptions): ResourceCheckpoints {
  const { executor } = options;
  const workspace = options.workspace ?? "/workspace";
  const cachePath = options.cachePath ?? "/tmp/.pai-checkpoint";

  /** Runs the program in `mode`, handing its stdout to `talk`; it must exit 0 once `talk` is done. */
  async function converse<RESULT>(
    mode: "take" | "restore",
    signal: AbortSignal,
    talk: (process: ExecutorProcess, output: OutputReader) => Promise<RESULT>,
  ): Promise<RESULT> {
    signal.throwIfAborted();
    const source = await checkpointProgram();
    const output = createOutputReader(`the checkpoint program (${mode})`);
    const process = executor.spawn({
      // -S -I: no site packages, no user or environment settings: a quick start, and nothing the sandbox set up.
      argv: ["python3", "-S", "-I", "-c", source, mode, workspace, cachePath],
      cwd: "/",
      stdin: "pipe",
      onStdout: (chunk) => output.push(chunk),
      signal,
      maxOutputBytes: 64 * 1024,
    });
    const exited = process.wait().then(
      (result) => {
        output.end(result.exitCode === 0 ? undefined : programFailed(mode, result));
        return result;
      },
      (error: unknown) => {
        output.end(error);
        throw error;
      },
    );
    let done = false;
    try {
      const answer = await talk(process, output);
      await process.closeStdin();
      const result = await exited;
      if (result.exitCode !== 0) throw programFailed(mode, result);
      done = true;
      return answer;
    } finally {
      if (!done) {
        process.kill("SIGKILL");
        await exited.catch(() => {});
      }
    }
  }

  return {
    async take({ store, signal }) {
      const started = performance.now();
      return converse("take", signal, async (process, output) => {
        const entries = decodeCheckpointRecords(await readBlock(output));
        const manifest: WorkspaceManifest = { version: 1, entries };
        asSandboxError(() => checkManifestEntries(entries));
        const files = entries.filter((entry) => entry.type === "file");
        const byDigest = new Map(files.map((file) => [file.digest, file]));
        const stored = await store.has([...byDigest.keys()]);
        const send = [...byDigest.values()].filter((file) => !stored.has(file.digest));
        await writeBlock(process, encodeCheckpointPaths(send.map((file) => file.path)));

        let bytesAdded = 0;
        let received = 0;
        let acknowledged = 0;
        async function* fileBytes(path: string): AsyncIterable<Uint8Array> {
          for (;;) {
            const length = (await output.read(4)).readUInt32BE(0);
            if (length === 0) return;
            if (length === failedFrame) {
              throw new SandboxError(
                "CONTAINER_FAILED",
                `checkpoint: ${path} could not be read in the sandbox`,
                {
                  details: { path },
                },
              );
            }
            if (length > frameBytes) throw protocolError("take", `a frame of ${length} bytes`);
            yield await output.read(length);
            received += length;
            if (received - acknowledged >= ackEvery) {
              acknowledged = received;
              await process.writeStdin(`ack ${received}\n`);
            }
          }
        }
        for (const file of send) {
          const blob = await store.put(fileBytes(file.path), { signal });
          if (blob.digest !== file.digest) {
            throw new SandboxError(
              "CHECKPOINT_MISMATCH",
              `checkpoint: ${file.path} changed while it was taken, or the sandbox's checkpoint cache lied about it (its bytes hash to ${blob.digest}, not ${file.digest}); nothing was recorded`,
              { details: { path: file.path, claimed: file.digest, actual: blob.digest } },
            );
          }
          bytesAdded += blob.bytes;
        }

        const recorded = await storeWorkspaceManifest({ store, manifest, signal });
        bytesAdded += recorded.bytesAdded;
        const { manifestDigest } = recorded;
        return {
          manifestDigest,
          files: files.length,
          totalBytes: files.reduce((sum, file) => sum + file.size, 0),
          bytesAdded,
          durationMs: performance.now() - started,
        };
      });
    },

    async restore(manifestDigest, { store, signal }) {
      const started = performance.now();
      // Read while the program starts and walks the workspace; a failure stops it (see converse).
      const loading = loadWorkspaceManifest({ store, manifestDigest, signal });
      loading.catch(() => {});
      return converse("restore", signal, async (process, output) => {
        const manifest = await loading;
        const files = new Map<string, ManifestEntry & { type: "file" }>();
        for (const entry of manifest.entries) if (entry.type === "file") files.set(entry.path, entry);
        await writeBlock(process, encodeCheckpointRecords(manifest.entries));
        const need = decodeCheckpointPaths(await readBlock(output));
        let bytesWritten = 0;
        for (const path of need) {
          const file = files.get(path);
          if (!file)
            throw protocolError("restore", `asked for ${JSON.stringify(path)}, not a file of the checkpoint`);
          const blob = await store.get(file.digest);
          if (!blob) throw missingBlob(manifestDigest, file.digest, path);
          try {
            for await (const chunk of blob as AsyncIterable<Buffer>) {
              signal.throwIfAborted();
              for (let offset = 0; offset < chunk.length; offset += frameBytes) {
                const piece = chunk.subarray(offset, offset + frameBytes);
                await process.writeStdin(Buffer.concat([frameHeader(piece.length), piece]));
                bytesWritten += piece.length;
              }
            }
          } finally {
            blob.destroy();
          }
          await process.writeStdin(frameHeader(0));
        }
        const finished = (await output.readLine(64)).toString("latin1");
        const counts = /^written (\d+) removed (\d+)$/.exec(finished);
        if (Number(counts?.[1]) !== need.length) {
          throw protocolError("restore", `it ended with ${JSON.stringify(finished)}`);
        }
        return {
          written: need.length,
          removed: Number(counts?.[2]),
          bytesWritten,
          durationMs: performance.now() - started,
        };
      });
    },
  };
}

function frameHeader(length: number): Buffer {
  const header = Buffer.alloc(4);
  header.writeUInt32BE(length, 0);
  return header;
}

/** A block the program wrote: a decimal byte count on a line, then the bytes. */
async function readBlock(output: OutputReader): Promise<Buffer> {
  const line = (await output.readLine(32)).toString("latin1");
  if (!/^\d{1,12}$/.test(line) || Number(line) > maxBlockBytes) {
    throw new SandboxError(
      "SANDBOX_PROTOCOL",
      `the checkpoint program announced a block of ${JSON.stringify(line)} bytes`,
    );
  }
  return output.read(Number(line));
}

/** A block for the program. */
async function writeBlock(process: ExecutorProcess, block: Buffer): Promise<void> {
  await process.writeStdin(Buffer.concat([Buffer.from(`${block.length}\n`), block]));
}

/** Manifest checks (`PaiError`) as the sandbox's error: what the program printed is not a valid workspace. */
function asSandboxError<VALUE>(check: () => VALUE): VALUE {
  try {
    return check();
  } catch (error) {
    if (!PaiError.isInstance(error)) throw error;
    throw new SandboxError("INVALID_ARGUMENT", `checkpoint: ${error.message}`, { cause: error });
  }
}

function protocolError(mode: string, what: string): SandboxError {
  return new SandboxError("SANDBOX_PROTOCOL", `the checkpoint program (${mode}) broke its protocol: ${what}`);
}

function programFailed(mode: string, result: ExecutorProcessResult): SandboxError {
  const stderr = new TextDecoder().decode(result.stderr).trim().split("\n").slice(-3).join(" | ");
  return new SandboxError(
    "CONTAINER_FAILED",
    `the checkpoint program (${mode}) ended with ${result.exitCode} (${result.terminationReason})${stderr ? `: ${stderr}` : ""}`,
    { details: { exitCode: result.exitCode } },
  );
}

function missingBlob(manifestDigest: string, digest: string, path: string): SandboxError {
  return new SandboxError(
    "NOT_FOUND",
    `checkpoint ${manifestDigest}: the bytes of ${path} (${digest}) are not in the store`,
    {
      details: { manifestDigest, digest, path },
    },
  );
}
