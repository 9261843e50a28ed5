import type { ExecutorProcess, ExecutorProcessResult } from "./command-executor.ts";
import { createOutputStream } from "./output-stream.ts";
import type { CommandResult, SandboxProcess, SpawnCommandOptions } from "./sandbox-facade.ts";
import { streamingDecoder } from "./streaming-decoder.ts";

const DEFAULT_MAX_BUFFERED_BYTES = 1024 * 1024;
const textDecoder = new TextDecoder();

/** Options of {@link startSandboxProcess}. */
export interface SandboxProcessOptions {
  /** Starts the command with these output callbacks (the executor's `spawn`). */
  spawn(output: { onStdout(chunk: Uint8Array): void; onStderr(chunk: Uint8Array): void }): ExecutorProcess;
  /** The command's options as the caller gave them: callbacks and how much unread output the streams buffer. */
  command: SpawnCommandOptions;
  /** What `output()` keeps of each stream (its head). */
  maxOutputBytes: number;
  /** The facade's result of an executor's result. */
  toResult(result: ExecutorProcessResult): Promise<CommandResult>;
}

/**
 * A background command's handle, once it runs: its output as streams (at most `maxBufferedBytes` unread each),
 * through the caller's callbacks and as kept text (`output()`), its result (`wait()`), `kill`, and its stdin.
 * @throws what the executor failed with when the command could not be started
 */
export async function startSandboxProcess(options: SandboxProcessOptions): Promise<SandboxProcess> {
  const { command, maxOutputBytes: maxKept } = options;
  const maxBuffered = command.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
  const stdoutStream = createOutputStream(maxBuffered);
  const stderrStream = createOutputStream(maxBuffered);
  const kept = { stdout: [] as Uint8Array[], stderr: [] as Uint8Array[] };
  const keptBytes = { stdout: 0, stderr: 0 };
  const keep = (which: "stdout" | "stderr", chunk: Uint8Array) => {
    // the live view of `output()`: the head only (the result has head and tail)
    if (keptBytes[which] >= maxKept) return;
    const part = chunk.subarray(0, maxKept - keptBytes[which]);
    kept[which].push(new Uint8Array(part));
    keptBytes[which] += part.length;
  };
  const onStdout = streamingDecoder(command.onStdout);
  const onStderr = streamingDecoder(command.onStderr);
  const process = options.spawn({
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
  const result = settled.then(options.toResult);
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
      stdout: textDecoder.decode(Buffer.concat(kept.stdout)),
      stderr: textDecoder.decode(Buffer.concat(kept.stderr)),
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
}
