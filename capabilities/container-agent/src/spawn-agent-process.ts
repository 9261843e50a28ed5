import type { AgentConnection } from "./agent-connection.ts";
import {
  type AgentProcess,
  type AgentProcessResult,
  type AgentSpawnOptions,
  DEFAULT_MAX_OUTPUT_BYTES,
} from "./agent-process.ts";
import {
  encodeSpawnPayload,
  encodeTerminalSize,
  FrameType,
  LINUX_SIGNALS,
  signalNumber,
} from "./agent-protocol.ts";
import { ContainerAgentError, protocolError } from "./container-agent-error.ts";
import { onProcessFrame } from "./process-frames.ts";
import {
  createProcessRun,
  failRun,
  type ProcessRun,
  settleRun,
  signalRun,
  terminateRun,
} from "./process-run.ts";
import { toBytes } from "./to-bytes.ts";

/** The signals `kill()` follows with SIGKILL after the grace period, and reports as `abort`. */
const TERMINATING = new Set<number>([
  LINUX_SIGNALS.SIGTERM,
  LINUX_SIGNALS.SIGINT,
  LINUX_SIGNALS.SIGHUP,
  LINUX_SIGNALS.SIGQUIT,
  LINUX_SIGNALS.SIGKILL,
]);

const noop = () => {};

/** The result of a command whose signal was aborted before it was requested: it never ran. */
function abortedBeforeStart(): AgentProcessResult {
  return {
    exitCode: null,
    signal: null,
    stdout: new Uint8Array(0),
    stderr: new Uint8Array(0),
    truncated: { stdout: false, stderr: false },
    omittedBytes: { stdout: 0, stderr: 0 },
    durationMs: 0,
    terminationReason: "abort",
  };
}

/** What the caller holds of `run`. */
function processHandle(run: ProcessRun): AgentProcess {
  return {
    pid: run.pid.promise,
    wait: () => run.result.promise,
    kill(signal = "SIGTERM", killOptions) {
      const number = signalNumber(signal);
      if (TERMINATING.has(number)) terminateRun(run, "abort", number, killOptions?.forceKillAfterMs);
      else signalRun(run, number);
    },
    writeStdin(data) {
      if (!run.stdinPipe) {
        return Promise.reject(
          new ContainerAgentError("INVALID_ARGUMENT", "writeStdin needs spawn({ stdin: 'pipe' })"),
        );
      }
      if (run.stdinEnded) {
        return Promise.reject(new ContainerAgentError("INVALID_ARGUMENT", "stdin was already closed"));
      }
      return run.stdin.write(toBytes(data));
    },
    closeStdin() {
      if (run.stdinEnded) return Promise.resolve();
      run.stdinEnded = true;
      return run.stdin.write(undefined);
    },
    writePipe(data) {
      if (!run.options.onPipe) {
        return Promise.reject(
          new ContainerAgentError("INVALID_ARGUMENT", "writePipe needs spawn({ onPipe })"),
        );
      }
      return run.pipe.write(toBytes(data));
    },
    resize(size) {
      if (!run.options.pty) {
        throw new ContainerAgentError("INVALID_ARGUMENT", "resize needs spawn({ pty: { cols, rows } })");
      }
      const payload = encodeTerminalSize(size);
      if (!run.done && !run.connection.closed) run.connection.send(FrameType.Resize, run.id, payload);
    },
  };
}

/** Once the SPAWN request is sent: the stdin given as bytes, the timeout and the abort signal. */
function startRun(run: ProcessRun): void {
  const { stdin, signal, timeoutMs } = run.options;
  if (stdin !== undefined && stdin !== "pipe") {
    run.stdinEnded = true;
    void run.stdin.write(toBytes(stdin)).catch(noop);
    void run.stdin.write(undefined).catch(noop);
  }
  if (timeoutMs !== undefined && Number.isFinite(timeoutMs)) {
    run.timeoutTimer = setTimeout(() => terminateRun(run, "timeout"), Math.max(0, timeoutMs));
  }
  if (signal) {
    const onAbort = () => terminateRun(run, "abort");
    signal.addEventListener("abort", onAbort, { once: true });
    run.removeAbortListener = () => signal.removeEventListener("abort", onAbort);
  }
}

/**
 * `AgentClient.spawn` over `connection`: sends the SPAWN request and answers with the command's handle. Throws
 * `INVALID_ARGUMENT` synchronously when the request cannot be encoded; a closed connection or an aborted signal
 * settle the handle instead.
 */
export function spawnAgentProcess(
  connection: AgentConnection,
  options: AgentSpawnOptions,
  stdinWindowBytes: number,
): AgentProcess {
  const maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  if (!Number.isInteger(maxOutputBytes) || maxOutputBytes < 0) {
    throw new ContainerAgentError("INVALID_ARGUMENT", "maxOutputBytes must be a non-negative integer");
  }
  const payload = encodeSpawnPayload({
    argv: options.argv,
    cwd: options.cwd,
    env: options.env,
    inheritEnv: options.inheritEnv,
    uid: options.uid,
    gid: options.gid,
    stdin: options.stdin !== undefined,
    killGroupOnExit: options.killGroupOnExit,
    pipe: options.onPipe !== undefined,
    pty: options.pty,
  });
  const run = createProcessRun({ connection, spawn: options, maxOutputBytes, stdinWindowBytes });
  const handle = processHandle(run);
  if (connection.closed) {
    failRun(run, protocolError("the container agent connection is closed"));
    return handle;
  }
  if (options.signal?.aborted) {
    settleRun(run);
    run.pid.reject(options.signal.reason);
    run.result.resolve(abortedBeforeStart());
    return handle;
  }
  run.id = connection.requests.add({
    onFrame: (frame) => onProcessFrame(run, frame),
    fail: (error) => failRun(run, error),
  });
  connection.send(FrameType.Spawn, run.id, payload);
  startRun(run);
  return handle;
}
