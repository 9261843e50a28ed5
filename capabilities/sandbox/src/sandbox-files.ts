import { posix } from "node:path";
import type { CommandExecutor } from "./command-executor.ts";
import type { FileScriptRunner } from "./run-file-script.ts";
import { SandboxError } from "./sandbox-error.ts";
import type { SandboxFacade, SandboxFileEntry, SandboxFileStat, SandboxFileType } from "./sandbox-facade.ts";
import { listScript, removeScript, scriptExit, statScript } from "./sandbox-scripts.ts";
import { traceFiles } from "./sandbox-spans.ts";
import { resolveWorkspacePath } from "./workspace-path.ts";

/** Options of {@link createSandboxFiles}. */
export interface SandboxFilesOptions {
  /** Reads and writes files. */
  executor: CommandExecutor;
  /** Lists, stats and removes files. */
  script: FileScriptRunner;
  workspace: string;
}

const DEFAULT_MAX_READ_BYTES = 64 * 1024 * 1024;
const textDecoder = new TextDecoder();

function typeOfLetter(letter: string): SandboxFileType {
  return letter === "f" ? "file" : letter === "d" ? "directory" : letter === "l" ? "symlink" : "other";
}

function typeOfMode(mode: number): SandboxFileStat["type"] {
  const format = mode & 0o170000;
  return format === 0o100000 ? "file" : format === 0o040000 ? "directory" : "other";
}

/** The list script's records (`<type letter> <size> <path>`, NUL-separated) as entries. */
function parseEntries(output: string): SandboxFileEntry[] {
  const entries: SandboxFileEntry[] = [];
  for (const record of output.split("\0")) {
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
}

/** The stat script's answer (`<path>\0<hex mode> <size> <mtime>`) as a stat. */
function parseStat(output: string): SandboxFileStat {
  const nul = output.indexOf("\0");
  const [mode, size, mtime] = output
    .slice(nul + 1)
    .trim()
    .split(" ");
  const rawMode = Number.parseInt(mode ?? "0", 16);
  return {
    path: output.slice(0, nul),
    type: typeOfMode(rawMode),
    size: Number(size),
    mode: rawMode & 0o7777,
    mtimeMs: Math.round(Number(mtime) * 1000),
  };
}

/**
 * The sandbox facade's files: `readFile` and `writeFiles` through the executor (the agent's frames, or `docker
 * exec`), listing, stat and removal through small scripts that resolve paths inside the container.
 */
export function createSandboxFiles(
  options: SandboxFilesOptions,
): Pick<SandboxFacade, "writeFiles" | "readFile" | "readTextFile" | "listFiles" | "stat" | "removeFile"> {
  const { executor, script, workspace } = options;
  const within = (path: string) => resolveWorkspacePath(path, workspace);

  async function readFile(path: string, readOptions: { maxBytes?: number; signal?: AbortSignal } = {}) {
    const target = within(path);
    readOptions.signal?.throwIfAborted();
    return traceFiles(
      "read",
      { files: 1 },
      () =>
        executor.readFile(target, {
          maxBytes: readOptions.maxBytes ?? DEFAULT_MAX_READ_BYTES,
          signal: readOptions.signal,
        }),
      (bytes) => bytes?.byteLength ?? 0,
    );
  }

  return {
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
      const bytes = entries.reduce((total, entry) => total + entry.content.byteLength, 0);
      await traceFiles("write", { files: entries.length, bytes }, () =>
        executor.writeFiles(entries, { signal: fileOptions.signal }),
      );
    },

    readFile,

    async readTextFile(path, readOptions = {}) {
      const bytes = await readFile(path, readOptions);
      return bytes === null ? null : textDecoder.decode(bytes);
    },

    async listFiles(directory, listOptions = {}) {
      const target = within(directory);
      const result = await script(listScript, [target, listOptions.recursive ? "" : "1"], {
        signal: listOptions.signal,
        maxOutputBytes: 64 * 1024 * 1024,
      });
      if (result.exitCode === scriptExit.missing) return null;
      return parseEntries(textDecoder.decode(result.stdout));
    },

    async stat(path, statOptions = {}) {
      const target = within(path);
      const result = await script(statScript, [target], { signal: statOptions.signal });
      if (result.exitCode === scriptExit.missing) return null;
      return parseStat(textDecoder.decode(result.stdout));
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
  };
}
