import { decodeExitPayload, decodeU32Payload, FrameType, LINUX_SIGNALS } from "./agent-protocol.ts";
import { agentError, unexpectedFrame } from "./agent-reply-errors.ts";
import type { Frame } from "./frame-codec.ts";
import { failRun, type ProcessRun, settleRun, terminateRun } from "./process-run.ts";

/**
 * Calls one of the command's callbacks; when it throws, the command is killed and `wait()` rejects with what it
 * threw. Nothing is called once a callback has thrown.
 */
function deliver(run: ProcessRun, callback: (chunk: Uint8Array) => void, chunk: Uint8Array): void {
  if (run.callbackError) return;
  try {
    callback(chunk);
  } catch (error) {
    run.callbackError = { error };
    terminateRun(run, "abort", LINUX_SIGNALS.SIGKILL, 0);
  }
}

function onOutput(run: ProcessRun, frame: Frame): void {
  if (!run.spawned) unexpectedFrame(frame, "a command not yet started");
  const isStdout = frame.type === FrameType.Stdout;
  const collector = isStdout ? run.stdout : run.stderr;
  collector.push(frame.payload);
  const callback = isStdout ? run.options.onStdout : run.options.onStderr;
  if (callback) deliver(run, callback, frame.payload);
  if (collector.truncated && run.options.onOutputLimit === "kill") terminateRun(run, "output-limit");
}

function onExit(run: ProcessRun, frame: Frame): void {
  if (!run.spawned) unexpectedFrame(frame, "a command not yet started");
  const status = decodeExitPayload(frame.payload);
  run.connection.requests.delete(run.id);
  settleRun(run);
  if (run.callbackError) {
    run.result.reject(run.callbackError.error);
    return;
  }
  run.result.resolve({
    ...status,
    stdout: run.stdout.bytes(),
    stderr: run.stderr.bytes(),
    truncated: { stdout: run.stdout.truncated, stderr: run.stderr.truncated },
    omittedBytes: { stdout: run.stdout.omittedBytes, stderr: run.stderr.omittedBytes },
    durationMs: performance.now() - run.startedAt,
    terminationReason: run.reason ?? "exit",
  });
}

/** A frame the agent sent about the command `run`. An unexpected one throws `SANDBOX_PROTOCOL`. */
export function onProcessFrame(run: ProcessRun, frame: Frame): void {
  switch (frame.type) {
    case FrameType.Spawned:
      if (run.spawned) unexpectedFrame(frame, "a started command");
      run.spawned = true;
      run.pid.resolve(decodeU32Payload(frame.payload, "SPAWNED"));
      return;
    case FrameType.Stdout:
    case FrameType.Stderr:
      onOutput(run, frame);
      return;
    case FrameType.StdinAck:
      run.stdin.acknowledged(decodeU32Payload(frame.payload, "STDIN_ACK"));
      return;
    case FrameType.PipeAck:
      run.pipe.acknowledged(decodeU32Payload(frame.payload, "STDIN_ACK"));
      return;
    case FrameType.PipeOut:
      if (!run.spawned || !run.options.onPipe) unexpectedFrame(frame, "a command without a pipe");
      deliver(run, run.options.onPipe, frame.payload);
      return;
    case FrameType.Exit:
      onExit(run, frame);
      return;
    case FrameType.Error:
      if (run.spawned) return; // a failed SIGNAL/STDIN for a running command; it goes on
      run.connection.requests.delete(run.id);
      failRun(run, agentError("SANDBOX_SPAWN_FAILED", frame.payload, { argv0: run.argv0 }));
      return;
    default:
      unexpectedFrame(frame, "a command");
  }
}
