import type { AgentConnection } from "./agent-connection.ts";
import type { AgentProcessResult, AgentSpawnOptions, TerminationReason } from "./agent-process.ts";
import { encodeSignalPayload, FrameType, LINUX_SIGNALS } from "./agent-protocol.ts";
import { type Deferred, deferred } from "./deferred.ts";
import { createOutputCollector, type OutputCollector } from "./output-collector.ts";
import { createProcessInput, type ProcessInput } from "./process-input.ts";

const DEFAULT_FORCE_KILL_AFTER_MS = 2000;

/** One command through the agent, from its SPAWN request to its end: what the host knows of it. */
export interface ProcessRun {
  readonly connection: AgentConnection;
  /** Its request id; 0 until the SPAWN request is sent. */
  id: number;
  readonly argv0: string;
  readonly startedAt: number;
  readonly stdout: OutputCollector;
  readonly stderr: OutputCollector;
  readonly options: AgentSpawnOptions;
  readonly pid: Deferred<number>;
  readonly result: Deferred<AgentProcessResult>;
  /** The agent reported SPAWNED. */
  spawned: boolean;
  /** Settled: exited, failed or never sent. */
  done: boolean;
  /** Why the host stopped it, when it did. */
  reason: TerminationReason | undefined;
  /** What an `onStdout`/`onStderr`/`onPipe` callback threw: `wait()` rejects with it. */
  callbackError: { error: unknown } | undefined;
  readonly stdinPipe: boolean;
  stdinEnded: boolean;
  readonly stdin: ProcessInput;
  readonly pipe: ProcessInput;
  forceKillTimer: ReturnType<typeof setTimeout> | undefined;
  timeoutTimer: ReturnType<typeof setTimeout> | undefined;
  removeAbortListener: () => void;
}

/** The state of a command about to be requested. */
export function createProcessRun(options: {
  connection: AgentConnection;
  spawn: AgentSpawnOptions;
  maxOutputBytes: number;
  stdinWindowBytes: number;
}): ProcessRun {
  const { connection, spawn, stdinWindowBytes } = options;
  const input = (frame: number) =>
    createProcessInput({
      frame,
      send: (type, payload) => connection.send(type, run.id, payload),
      live: () => !run.done && !connection.closed,
      windowBytes: stdinWindowBytes,
    });
  const run: ProcessRun = {
    connection,
    id: 0,
    argv0: spawn.argv[0]!,
    startedAt: performance.now(),
    stdout: createOutputCollector(options.maxOutputBytes),
    stderr: createOutputCollector(options.maxOutputBytes),
    options: spawn,
    pid: deferred<number>(),
    result: deferred<AgentProcessResult>(),
    spawned: false,
    done: false,
    reason: undefined,
    callbackError: undefined,
    stdinPipe: spawn.stdin === "pipe",
    stdinEnded: spawn.stdin === undefined,
    stdin: input(FrameType.Stdin),
    pipe: input(FrameType.PipeIn),
    forceKillTimer: undefined,
    timeoutTimer: undefined,
    removeAbortListener: () => {},
  };
  return run;
}

/** Marks the command ended: timers and the abort listener gone, queued input dropped. */
export function settleRun(run: ProcessRun): void {
  run.done = true;
  clearTimeout(run.timeoutTimer);
  clearTimeout(run.forceKillTimer);
  run.removeAbortListener();
  // Input for a command that is gone is dropped, not an error.
  run.stdin.drop();
  run.pipe.drop();
}

/** Ends the command with `error`: its pid and its result reject. */
export function failRun(run: ProcessRun, error: unknown): void {
  if (run.done) return;
  settleRun(run);
  run.pid.reject(error);
  run.result.reject(error);
}

/** Sends `signal` to the command's process group while it runs. */
export function signalRun(run: ProcessRun, signal: number): void {
  if (run.done || run.connection.closed) return;
  run.connection.send(FrameType.Signal, run.id, encodeSignalPayload(signal));
}

/**
 * Stops the command for `reason` (the first reason given is the one reported): `signal` (SIGTERM) to its process
 * group, then SIGKILL after `forceKillAfterMs` unless the signal was SIGKILL.
 */
export function terminateRun(
  run: ProcessRun,
  reason: TerminationReason,
  signal: number = LINUX_SIGNALS.SIGTERM,
  forceKillAfterMs = run.options.forceKillAfterMs ?? DEFAULT_FORCE_KILL_AFTER_MS,
): void {
  if (run.done) return;
  run.reason ??= reason;
  signalRun(run, signal);
  if (
    signal !== LINUX_SIGNALS.SIGKILL &&
    run.forceKillTimer === undefined &&
    Number.isFinite(forceKillAfterMs)
  ) {
    run.forceKillTimer = setTimeout(() => signalRun(run, LINUX_SIGNALS.SIGKILL), forceKillAfterMs);
  }
}
