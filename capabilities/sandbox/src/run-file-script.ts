import { posix } from "node:path";
import tar from "tar-stream";
import type { ExecutorFile, ExecutorProcessResult, ExecutorSpawnOptions } from "./command-executor.ts";
import { SandboxError } from "./sandbox-error.ts";
import { readScript, scriptExit, writeScript } from "./sandbox-scripts.ts";

/** How a script is started: an executor's `spawn`. */
type Spawn = (options: ExecutorSpawnOptions) => { wait(): Promise<ExecutorProcessResult> };

const textDecoder = new TextDecoder();

/** Options of one file script run. */
export interface FileScriptOptions {
  signal?: AbortSignal | undefined;
  /** Bytes the script reads on stdin. */
  stdin?: Uint8Array;
  /** Output past this is `INVALID_ARGUMENT` (over the limit). @default 16777216 */
  maxOutputBytes?: number;
}

/** {@link runFileScript} bound to one sandbox's executor and workspace. */
export type FileScriptRunner = (
  source: string,
  args: readonly string[],
  extra?: FileScriptOptions,
) => Promise<ExecutorProcessResult>;

/**
 * Runs one of the file scripts (`sandbox-scripts.ts`) as the sandbox user, with the workspace as `$1`, and maps
 * its exit codes to the facade's errors: `PATH_OUTSIDE_WORKSPACE` (with the path it resolved to),
 * `INVALID_ARGUMENT` (a directory, not a directory, not a regular file, over the limit) or `CONTAINER_FAILED`.
 * `missing` is returned for the caller to map.
 */
export async function runFileScript(
  spawn: Spawn,
  workspace: string,
  source: string,
  args: readonly string[],
  extra: FileScriptOptions = {},
): Promise<ExecutorProcessResult> {
  extra.signal?.throwIfAborted();
  const result = await spawn({
    argv: ["sh", "-c", source, "sh", workspace, ...args],
    signal: extra.signal,
    stdin: extra.stdin,
    maxOutputBytes: extra.maxOutputBytes ?? 16 * 1024 * 1024,
    onOutputLimit: "kill",
  }).wait();
  if (extra.signal?.aborted) throw extra.signal.reason;
  if (result.terminationReason === "abort")
    throw new SandboxError("CONTAINER_FAILED", "the operation was stopped");
  // The write script names the target it refused after the path it resolved to; the others take one path.
  const [resolved = "", named] = textDecoder.decode(result.stderr).split("\n");
  const path = named || args[0];
  if (result.exitCode === scriptExit.outside) throw outsideWorkspace(path ?? "", resolved, workspace);
  if (result.exitCode === scriptExit.isADirectory) throw invalidTarget(path, "is a directory");
  if (result.exitCode === scriptExit.notADirectory) throw invalidTarget(path, "is not a directory");
  if (result.exitCode === scriptExit.notAFile) throw invalidTarget(path, "is not a regular file");
  if (result.terminationReason === "output-limit") throw overLimit(path ?? "");
  if (result.exitCode !== scriptExit.ok && result.exitCode !== scriptExit.missing) {
    throw new SandboxError(
      "CONTAINER_FAILED",
      `sandbox file operation on ${path} failed (exit ${result.exitCode}): ${textDecoder.decode(result.stderr).trim()}`,
      { details: { path, exitCode: result.exitCode } },
    );
  }
  return result;
}

/** `PATH_OUTSIDE_WORKSPACE`: `path` resolved to `resolved`. */
export function outsideWorkspace(path: string, resolved: string, workspace: string): SandboxError {
  return new SandboxError("PATH_OUTSIDE_WORKSPACE", `${path} resolves to ${resolved}, outside ${workspace}`, {
    details: { path, resolved, workspace },
  });
}

/** `INVALID_ARGUMENT`: `path` is the wrong kind of thing. */
export function invalidTarget(path: string | undefined, what: string): SandboxError {
  return new SandboxError("INVALID_ARGUMENT", `${path} ${what}`, { details: { path } });
}

/** `INVALID_ARGUMENT`: `path` is larger than the caller's limit. */
export function overLimit(path: string): SandboxError {
  return new SandboxError("INVALID_ARGUMENT", `the answer for ${path} is larger than the limit`, {
    details: { path },
  });
}

/** A file's bytes through `readScript` (`cat`), or `null` when it does not exist. */
export async function readFileByScript(
  spawn: Spawn,
  workspace: string,
  path: string,
  options: { maxBytes: number; signal?: AbortSignal | undefined },
): Promise<Uint8Array | null> {
  const result = await runFileScript(spawn, workspace, readScript, [path], {
    signal: options.signal,
    maxOutputBytes: options.maxBytes,
  });
  return result.exitCode === scriptExit.missing ? null : result.stdout;
}

/** Writes files through `writeScript`: every target checked first, then one tar extracted as the sandbox user. */
export async function writeFilesByScript(
  spawn: Spawn,
  workspace: string,
  files: readonly ExecutorFile[],
  options: { signal?: AbortSignal | undefined },
): Promise<void> {
  const pack = tar.pack();
  for (const file of files) {
    pack.entry(
      {
        name: posix.relative(workspace, file.path),
        type: "file",
        mode: file.mode,
        uid: 1000,
        gid: 1000,
        size: file.content.length,
      },
      Buffer.from(file.content.buffer, file.content.byteOffset, file.content.length),
    );
  }
  pack.finalize();
  const chunks: Uint8Array[] = [];
  for await (const chunk of pack) chunks.push(chunk as Uint8Array);
  await runFileScript(
    spawn,
    workspace,
    writeScript,
    files.map((file) => file.path),
    { signal: options.signal, stdin: Buffer.concat(chunks) },
  );
}
