import type {
  Experimental_SandboxDirectoryEntry as SandboxDirectoryEntry,
  Experimental_SandboxSession as SandboxSession,
  Experimental_SandboxProcess as SandboxSessionProcess,
  Experimental_SandboxSpawnOptions as SandboxSpawnOptions,
  Experimental_SandboxSpawnOptionsWithoutStdin as SandboxSpawnOptionsWithoutStdin,
  Experimental_SandboxSpawnOptionsWithStdin as SandboxSpawnOptionsWithStdin,
  Experimental_WritableSandboxProcess as WritableSandboxProcess,
} from "@ai-sdk/provider-utils";
import type { SandboxFacade } from "./sandbox-facade.ts";

/** Options of {@link toSandboxSession}. */
export interface ToSandboxSessionOptions {
  /**
   * What the model is told about the environment (the session's `description`).
   * @default a description of the PAI sandbox image and its workspace
   */
  description?: string;
}

const DEFAULT_DESCRIPTION =
  "A Linux sandbox (Debian) with bash, coreutils, python3, node and git. The working directory and the only " +
  "writable place for your files is /workspace (relative paths resolve against it; paths outside it are " +
  "refused); /tmp is scratch space. There is no network access. Commands run as a non-root user.";

function encodeText(text: string, encoding: string | undefined): Uint8Array {
  const name = (encoding ?? "utf-8").toLowerCase();
  if (name === "utf-8" || name === "utf8") return new TextEncoder().encode(text);
  if (!Buffer.isEncoding(name)) throw new RangeError(`unsupported text encoding: ${encoding}`);
  return Buffer.from(text, name);
}

/** Lines `startLine`..`endLine` (1-based, inclusive, line endings kept). */
function sliceLines(text: string, startLine: number | undefined, endLine: number | undefined): string {
  if (startLine === undefined && endLine === undefined) return text;
  const lines = text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  const start = Math.max(1, startLine ?? 1);
  const end = endLine ?? lines.length;
  return lines.slice(start - 1, Math.max(start - 1, end)).join("");
}

async function collect(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const chunk of stream) parts.push(chunk);
  return Buffer.concat(parts);
}

/**
 * Presents a sandbox facade as the AI SDK's `SandboxSession`, so AI SDK tools can use it as
 * `experimental_sandbox`. Works on `ctx.capabilities.sandbox` too (it only calls the facade's methods, so the
 * container is still provisioned on first use).
 *
 * Relative paths resolve against `/workspace`; absolute paths outside it are refused
 * (`PATH_OUTSIDE_WORKSPACE`), a stricter rule than the SDK's "absolute paths are used as is".
 *
 * @example
 * const result = streamText({ model, tools, experimental_sandbox: toSandboxSession(ctx.capabilities.sandbox) });
 */
export function toSandboxSession(
  facade: SandboxFacade,
  options: ToSandboxSessionOptions = {},
): SandboxSession {
  function spawn(spawnOptions: SandboxSpawnOptionsWithStdin): Promise<WritableSandboxProcess>;
  function spawn(spawnOptions: SandboxSpawnOptionsWithoutStdin): Promise<SandboxSessionProcess>;
  function spawn(spawnOptions: SandboxSpawnOptions): Promise<SandboxSessionProcess | WritableSandboxProcess>;
  async function spawn(
    spawnOptions: SandboxSpawnOptions,
  ): Promise<SandboxSessionProcess | WritableSandboxProcess> {
    const process = await facade.spawn({
      command: spawnOptions.command,
      ...(spawnOptions.workingDirectory !== undefined ? { cwd: spawnOptions.workingDirectory } : {}),
      ...(spawnOptions.env !== undefined ? { env: spawnOptions.env } : {}),
      ...(spawnOptions.abortSignal !== undefined ? { signal: spawnOptions.abortSignal } : {}),
      ...(spawnOptions.stdin ? { stdin: "pipe" as const } : {}),
    });
    const handle: SandboxSessionProcess = {
      ...(process.pid !== undefined ? { pid: process.pid } : {}),
      stdout: process.stdout,
      stderr: process.stderr,
      async wait() {
        const result = await process.wait();
        if (result.terminationReason === "abort" && spawnOptions.abortSignal?.aborted) {
          throw spawnOptions.abortSignal.reason;
        }
        return { exitCode: result.exitCode };
      },
      kill: () => process.kill(),
    };
    if (!spawnOptions.stdin) return handle;
    const writable: WritableSandboxProcess = {
      ...handle,
      stdin: new WritableStream<Uint8Array>({
        write: (chunk) => process.writeStdin(chunk),
        close: () => process.closeStdin(),
        abort: () => process.closeStdin(),
      }),
    };
    return writable;
  }

  const session: SandboxSession = {
    description: options.description ?? DEFAULT_DESCRIPTION,

    async readFile({ path, abortSignal }) {
      const bytes = await facade.readFile(path, abortSignal ? { signal: abortSignal } : {});
      if (bytes === null) return null;
      return new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes);
          controller.close();
        },
      });
    },

    readBinaryFile: ({ path, abortSignal }) =>
      facade.readFile(path, abortSignal ? { signal: abortSignal } : {}),

    async readTextFile({ path, abortSignal, encoding, startLine, endLine }) {
      const bytes = await facade.readFile(path, abortSignal ? { signal: abortSignal } : {});
      if (bytes === null) return null;
      const text = new TextDecoder(encoding ?? "utf-8").decode(bytes);
      return sliceLines(text, startLine, endLine);
    },

    async writeFile({ path, content, abortSignal }) {
      const bytes = await collect(content);
      await facade.writeFiles([{ path, content: bytes }], abortSignal ? { signal: abortSignal } : {});
    },

    writeBinaryFile: ({ path, content, abortSignal }) =>
      facade.writeFiles([{ path, content }], abortSignal ? { signal: abortSignal } : {}),

    writeTextFile: ({ path, content, encoding, abortSignal }) =>
      facade.writeFiles(
        [{ path, content: encodeText(content, encoding) }],
        abortSignal ? { signal: abortSignal } : {},
      ),

    async stat({ path, abortSignal }) {
      const stat = await facade.stat(path, abortSignal ? { signal: abortSignal } : {});
      return stat === null ? null : { type: stat.type, size: stat.size };
    },

    async listDirectory({ path, abortSignal }) {
      const entries = await facade.listFiles(path, abortSignal ? { signal: abortSignal } : {});
      if (entries === null) return null;
      return entries.map((entry): SandboxDirectoryEntry => ({ name: entry.name, type: entry.type }));
    },

    deleteFile: ({ path, abortSignal }) =>
      facade.removeFile(path, abortSignal ? { signal: abortSignal } : {}),

    spawn,

    async run({ command, workingDirectory, env, abortSignal }) {
      const result = await facade.runCommand({
        command,
        ...(workingDirectory !== undefined ? { cwd: workingDirectory } : {}),
        ...(env !== undefined ? { env } : {}),
        ...(abortSignal !== undefined ? { signal: abortSignal } : {}),
      });
      if (result.terminationReason === "abort" && abortSignal?.aborted) throw abortSignal.reason;
      return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr };
    },
  };
  return session;
}
