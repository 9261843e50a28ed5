import { posix } from "node:path";
import type { Readable } from "node:stream";
import type { ContainerDriver } from "@pai/pool";
import type { CommandExecutor, ExecutorProcessResult } from "./command-executor.ts";
import { packDirectory } from "./pack-directory.ts";
import { runFileScript } from "./run-file-script.ts";
import { SandboxError } from "./sandbox-error.ts";
import type {
  CommandResult,
  RunCommandOptions,
  SandboxFacade,
  SandboxFileEntry,
  SandboxFileStat,
  SandboxFileType,
  SandboxInfo,
  SandboxProcess,
  SpawnCommandOptions,
  UploadResult,
} from "./sandbox-facade.ts";
import {
  directoryScript,
  listScript,
  oomCountScript,
  removeScript,
  scriptExit,
  statScript,
  uploadTargetScript,
} from "./sandbox-scripts.ts";
import { transformTar } from "./transform-tar.ts";
import { createUploadHeaderSanitizer } from "./upload-header-sanitizer.ts";
import { resolveWorkingDirectory, resolveWorkspacePath } from "./workspace-path.ts";

/** Options of {@link createSandboxFacade}. */
export interface SandboxFacadeOptions {
  /** How commands reach the container. */
  executor: CommandExecutor;
  /** The engine, for the archive API (`downloadDirectory`). */
  driver: ContainerDriver;
  containerId: string;
  image: string;
  /** @default "/workspace" */
  workspace?: string;
  /**
   * argv prefix that runs a command line when `runCommand` gets no `args`.
   * @default ["bash", "-c"]
   */
  shell?: readonly string[];
  /** Default of `maxOutputBytes`. @default 1048576 */
  maxOutputBytes?: number;
  /** Owner of uploaded files. @default 1000 */
  uid?: number;
  /** Group of uploaded files. @default 1000 */
  gid?: number;
}

const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
const DEFAULT_MAX_READ_BYTES = 64 * 1024 * 1024;
const DEFAULT_MAX_BUFFERED_BYTES = 1024 * 1024;
const textDecoder = new TextDecoder();

function decode(bytes: Uint8Array): string {
  return textDecoder.decode(bytes);
}

/** Feeds a string callback from byte chunks, keeping multi-byte characters whole across chunks. */
function streamingDecoder(callback: ((chunk: string) => void) | undefined) {
  if (!callback) return undefined;
  const decoder = new TextDecoder();
  return {
    push(chunk: Uint8Array) {
      const text = decoder.decode(chunk, { stream: true });
      if (text !== "") callback(text);
    },
    flush() {
      const text = decoder.decode();
      if (text !== "") callback(text);
    },
  };
}

function typeOfLetter(letter: string): SandboxFileType {
  return letter === "f" ? "file" : letter === "d" ? "directory" : letter === "l" ? "symlink" : "other";
}

function typeOfMode(mode: number): SandboxFileStat["type"] {
  const format = mode & 0o170000;
  return format === 0o100000 ? "file" : format === 0o040000 ? "directory" : "other";
}

/** A web byte stream fed by `push`, buffering at most `maxBytes` unread (later chunks are dropped). */
function createOutputStream(maxBytes: number) {
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  let open = true;
  const stream = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
      },
      cancel() {
        open = false;
      },
    },
    // desiredSize is then minus the unread bytes
    new ByteLengthQueuingStrategy({ highWaterMark: 0 }),
  );
  return {
    stream,
    push(chunk: Uint8Array) {
      if (!open || !controller) return;
      const unread = -(controller.desiredSize ?? 0);
      if (unread + chunk.length > maxBytes) return;
      controller.enqueue(new Uint8Array(chunk));
    },
    close() {
      if (!open || !controller) return;
      open = false;
      controller.close();
    },
  };
}

/**
 * The {@link SandboxFacade} over one container: commands, `readFile` and `writeFiles` through `executor` (the
 * agent's frames, or `docker exec`), the other file methods through small scripts that resolve paths inside the
 * container, directory upload and download through the archive API.
 */
export function createSandboxFacade(options: SandboxFacadeOptions): SandboxFacade {
  const { executor, driver, containerId, image } = options;
  const workspace = options.workspace ?? "/workspace";
  const shell = options.shell ?? ["bash", "-c"];
  const defaultMaxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  let oomKillsSeen: number | undefined;

  const within = (path: string) => resolveWorkspacePath(path, workspace);

  /** Runs a file script (stat, list, remove, directories); `missing` is returned for the caller to map. */
  const script = (
    source: string,
    args: readonly string[],
    extra: { signal?: AbortSignal | undefined; maxOutputBytes?: number } = {},
  ) => runFileScript((spawnOptions) => executor.spawn(spawnOptions), workspace, source, args, extra);

  async function oomKilledSince(): Promise<boolean> {
    try {
      const result = await executor
        .spawn({ argv: ["sh", "-c", oomCountScript], maxOutputBytes: 4096 })
        .wait();
      const match = /oom_kill (\d+)/.exec(decode(result.stdout));
      if (!match) return false;
      const count = Number(match[1]);
      const before = oomKillsSeen ?? 0;
      oomKillsSeen = count;
      return count > before;
    } catch {
      return false;
    }
  }

  async function toCommandResult(result: ExecutorProcessResult): Promise<CommandResult> {
    const { exitCode } = result;
    const out: CommandResult = {
      exitCode,
      stdout: decode(result.stdout),
      stderr: decode(result.stderr),
      durationMs: result.durationMs,
      terminationReason: result.terminationReason,
      truncated: result.truncated,
      omittedBytes: result.omittedBytes,
    };
    if (exitCode === 137 && result.terminationReason === "exit" && (await oomKilledSince())) {
      out.oomKilled = true;
    }
    return out;
  }

  function startCommand(commandOptions: SpawnCommandOptions, defaultLimit: "kill" | "truncate") {
    if (typeof commandOptions?.command !== "string" || commandOptions.command === "") {
      throw new SandboxError("INVALID_ARGUMENT", "runCommand needs a non-empty `command` string");
    }
    const argv = commandOptions.args
      ? [commandOptions.command, ...commandOptions.args]
      : [...shell, commandOptions.command];
    return {
      argv,
      cwd:
        commandOptions.cwd !== undefined ? resolveWorkingDirectory(commandOptions.cwd, workspace) : undefined,
      env: commandOptions.env,
      signal: commandOptions.signal,
      timeoutMs: commandOptions.timeoutMs,
      maxOutputBytes: commandOptions.maxOutputBytes ?? defaultMaxOutputBytes,
      onOutputLimit: commandOptions.onOutputLimit ?? defaultLimit,
      forceKillAfterMs: commandOptions.forceKillAfterMs,
    };
  }

  const facade: SandboxFacade = {
    async runCommand(commandOptions: RunCommandOptions) {
      const spec = startCommand(commandOptions, "kill");
      spec.signal?.throwIfAborted();
      const onStdout = streamingDecoder(commandOptions.onStdout);
      const onStderr = streamingDecoder(commandOptions.onStderr);
      const result = await executor
        .spawn({
          ...spec,
          stdin: commandOptions.stdin,
          killGroupOnExit: true,
          onStdout: onStdout?.push,
          onStderr: onStderr?.push,
        })
        .wait();
      onStdout?.flush();
      onStderr?.flush();
      return toCommandResult(result);
    },

    async spawn(commandOptions: SpawnCommandOptions): Promise<SandboxProcess> {
      const spec = startCommand(commandOptions, "truncate");
      spec.signal?.throwIfAborted();
      const maxBuffered = commandOptions.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
      const stdoutStream = createOutputStream(maxBuffered);
      const stderrStream = createOutputStream(maxBuffered);
      const maxKept = spec.maxOutputBytes;
      const kept = { stdout: [] as Uint8Array[], stderr: [] as Uint8Array[] };
      const keptBytes = { stdout: 0, stderr: 0 };
      const keep = (which: "stdout" | "stderr", chunk: Uint8Array) => {
        // the live view of `output()`: the head only (the result has head and tail)
        if (keptBytes[which] >= maxKept) return;
        const part = chunk.subarray(0, maxKept - keptBytes[which]);
        kept[which].push(new Uint8Array(part));
        keptBytes[which] += part.length;
      };
      const onStdout = streamingDecoder(commandOptions.onStdout);
      const onStderr = streamingDecoder(commandOptions.onStderr);
      const process = executor.spawn({
        ...spec,
        stdin: commandOptions.stdin,
        onStdout: (chunk) => {
          keep("stdout", chunk);
          stdoutStream.push(chunk);
          onStdout?.push(chunk);
        },
        onStderr: (chunk) => {
          keep("stderr", chunk);
          stderrStream.push(chunk);
          onStderr?.push(chunk);
        },
      });
      const settled = process.wait().finally(() => {
        onStdout?.flush();
        onStderr?.flush();
        stdoutStream.close();
        stderrStream.close();
      });
      settled.catch(() => {});
      const result = settled.then(toCommandResult);
      result.catch(() => {});
      // No pid: either the exec failed (rethrow that) or the wrapper never ran (the result tells).
      const pid = await process.pid.catch(async () => {
        const failure = await settled.then(
          () => undefined,
          (error: unknown) => ({ error }),
        );
        if (failure) throw failure.error;
        return undefined;
      });
      return {
        pid,
        stdout: stdoutStream.stream,
        stderr: stderrStream.stream,
        output: () => ({
          stdout: decode(Buffer.concat(kept.stdout)),
          stderr: decode(Buffer.concat(kept.stderr)),
        }),
        wait: () => result,
        async kill(signal = "SIGTERM", killOptions = {}) {
          process.kill(signal, killOptions);
          if (signal === "SIGUSR1" || signal === "SIGUSR2") return;
          await settled.catch(() => undefined);
        },
        writeStdin: (data) => process.writeStdin(data),
        closeStdin: () => process.closeStdin(),
      };
    },

    async writeFiles(files, fileOptions = {}) {
      if (!Array.isArray(files))
        throw new SandboxError("INVALID_ARGUMENT", "writeFiles needs an array of files");
      if (files.length === 0) return;
      if (files.some((file) => typeof file.path === "string" && file.path.includes("\n"))) {
        throw new SandboxError("INVALID_ARGUMENT", "a file path cannot contain a newline");
      }
      const targets = files.map((file) => within(file.path));
      for (const target of targets) {
        if (target === workspace) {
          throw new SandboxError("INVALID_ARGUMENT", "cannot write a file over the workspace directory");
        }
      }
      const entries = files.map((file, index) => {
        const content = typeof file.content === "string" ? Buffer.from(file.content) : file.content;
        if (!(content instanceof Uint8Array)) {
          throw new SandboxError("INVALID_ARGUMENT", `content of ${file.path} must be a string or bytes`);
        }
        return { path: targets[index]!, content, mode: file.mode ?? 0o644 };
      });
      fileOptions.signal?.throwIfAborted();
      await executor.writeFiles(entries, { signal: fileOptions.signal });
    },

    async readFile(path, readOptions = {}) {
      const target = within(path);
      readOptions.signal?.throwIfAborted();
      return executor.readFile(target, {
        maxBytes: readOptions.maxBytes ?? DEFAULT_MAX_READ_BYTES,
        signal: readOptions.signal,
      });
    },

    async readTextFile(path, readOptions = {}) {
      const bytes = await facade.readFile(path, readOptions);
      return bytes === null ? null : decode(bytes);
    },

    async listFiles(directory, listOptions = {}) {
      const target = within(directory);
      const result = await script(listScript, [target, listOptions.recursive ? "" : "1"], {
        signal: listOptions.signal,
        maxOutputBytes: 64 * 1024 * 1024,
      });
      if (result.exitCode === scriptExit.missing) return null;
      const entries: SandboxFileEntry[] = [];
      for (const record of decode(result.stdout).split("\0")) {
        if (record === "") continue;
        const first = record.indexOf(" ");
        const second = record.indexOf(" ", first + 1);
        const path = record.slice(second + 1);
        entries.push({
          path,
          name: posix.basename(path),
          type: typeOfLetter(record.slice(0, first)),
          size: Number(record.slice(first + 1, second)),
        });
      }
      return entries;
    },

    async stat(path, statOptions = {}) {
      const target = within(path);
      const result = await script(statScript, [target], { signal: statOptions.signal });
      if (result.exitCode === scriptExit.missing) return null;
      const text = decode(result.stdout);
      const nul = text.indexOf("\0");
      const [mode, size, mtime] = text
        .slice(nul + 1)
        .trim()
        .split(" ");
      const rawMode = Number.parseInt(mode ?? "0", 16);
      return {
        path: text.slice(0, nul),
        type: typeOfMode(rawMode),
        size: Number(size),
        mode: rawMode & 0o7777,
        mtimeMs: Math.round(Number(mtime) * 1000),
      };
    },

    async removeFile(path, removeOptions = {}) {
      const target = within(path);
      if (target === workspace)
        throw new SandboxError("INVALID_ARGUMENT", "cannot remove the workspace itself");
      const result = await script(removeScript, [target, removeOptions.recursive ? "r" : ""], {
        signal: removeOptions.signal,
      });
      return result.exitCode !== scriptExit.missing;
    },

    async uploadDirectory(source, targetDirectory = ".", uploadOptions = {}): Promise<UploadResult> {
      const target = within(targetDirectory);
      // Resolve (symlinks checked inside the container) and create the directory as the sandbox user, then
      // stream the sanitized archive through the engine's archive API: bulk bytes never cross the agent.
      const prepared = await script(uploadTargetScript, [target], { signal: uploadOptions.signal });
      const resolved = decode(prepared.stdout);
      const sanitize = createUploadHeaderSanitizer({ uid: options.uid ?? 1000, gid: options.gid ?? 1000 });
      // a host directory is packed with sanitized headers directly; a tar stream is rewritten entry by entry
      const sanitized =
        typeof source === "string"
          ? packDirectory(source, { ...uploadOptions, map: sanitize })
          : transformTar(source, sanitize);
      const done = sanitized.done;
      done.catch(() => {});
      try {
        await driver.putArchive(
          containerId,
          resolved,
          sanitized.stream,
          uploadOptions.signal ? { signal: uploadOptions.signal } : {},
        );
      } catch (error) {
        // The engine may stop reading without closing the stream: stop packing. The sanitizer's verdict (an entry
        // escaping the target) explains a broken upload best.
        sanitized.stream.destroy();
        await done;
        throw error;
      }
      const stats = await done;
      return { entries: stats.entries, bytes: stats.bytes };
    },

    async downloadDirectory(directory, downloadOptions = {}): Promise<Readable> {
      const target = within(directory);
      const result = await script(directoryScript, [target], { signal: downloadOptions.signal });
      if (result.exitCode === scriptExit.missing) {
        throw new SandboxError("NOT_FOUND", `no directory ${directory} in the sandbox`, {
          details: { path: directory },
        });
      }
      const resolved = decode(result.stdout);
      const archive = await driver.getArchive(
        containerId,
        resolved,
        downloadOptions.signal ? { signal: downloadOptions.signal } : {},
      );
      // The archive API names entries `<basename>/...`: strip that so names are relative to the directory.
      const root = posix.basename(resolved);
      return transformTar(archive, (header) => {
        const name = header.name.replace(/^\.\//, "");
        if (name === root || name === `${root}/`) return undefined;
        if (!name.startsWith(`${root}/`)) return undefined;
        const rest = name.slice(root.length + 1);
        const linkname =
          header.type === "link" && header.linkname?.startsWith(`${root}/`)
            ? header.linkname.slice(root.length + 1)
            : header.linkname;
        return { ...header, name: rest, linkname: linkname ?? null };
      }).stream;
    },

    async info(): Promise<SandboxInfo> {
      return { id: containerId, workspace, image, executor: executor.kind };
    },
  };
  return facade;
}
