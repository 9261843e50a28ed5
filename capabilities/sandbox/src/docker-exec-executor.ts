import { createOutputCollector, SANDBOX_USER } from "@pai/container-agent";
import type { ContainerDriver, ExecSession } from "@pai/pool";
import type {
  CommandExecutor,
  ExecutorProcess,
  ExecutorProcessResult,
  ExecutorSpawnOptions,
} from "./command-executor.ts";
import { readFileByScript, writeFilesByScript } from "./run-file-script.ts";
import { SandboxError } from "./sandbox-error.ts";
import type { SandboxSignal, TerminationReason } from "./sandbox-facade.ts";

/** Options of {@link createDockerExecExecutor}. */
export interface DockerExecExecutorOptions {
  driver: ContainerDriver;
  containerId: string;
  /**
   * `uid:gid` commands (and the session that signals them) run as: not the container's main user, so that no
   * command can signal the container's main process.
   * @default "1000:1000" (`SANDBOX_USER`)
   */
  user?: string | undefined;
  /** The directory file operations are confined to. @default "/workspace" */
  workspace?: string | undefined;
}

/** Kept bytes per stream when `maxOutputBytes` is not given. */
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
const DEFAULT_FORCE_KILL_AFTER_MS = 2000;
const PID_HEADER_BYTES = 10;
const EXIT_POLL_FIRST_MS = 150;
const EXIT_POLL_INTERVAL_MS = 200;
const EXIT_DRAIN_MS = 50;

/**
 * What every command runs as: print our pid (fixed width, on stdout, stripped by the host), change to the working
 * directory, then `exec` the command.
 */
const COMMAND = 'printf "%010d" "$$"; if [ -n "$1" ]; then cd -- "$1" || exit 2; fi; shift; exec "$@"';

/**
 * The wrapper around {@link COMMAND}: it first makes the shell a process group (and session) leader, so the pid it
 * prints is the command's process group id and killing `-pid` reaches everything it started (unless a descendant
 * made its own session). runc makes an exec'd process a session leader itself; crun does not (the process stays in
 * a group outside the container's pid namespace), so there the shell re-executes itself under `setsid`, which keeps
 * its pid because it is not a group leader yet.
 */
const WRAPPER = `read -r _ _ _ _ group _ </proc/$$/stat; if [ "$group" != "$$" ] && command -v setsid >/dev/null; then exec setsid sh -c '${COMMAND}' sh "$@"; fi; ${COMMAND}`;

/**
 * A long-lived shell (one per container) that signals process groups for us. `read` and `kill` are dash
 * builtins, so it needs no new process: it still works when a fork bomb has used up the pids limit, where a
 * fresh `docker exec kill` would fail. `KILL` repeats until the group is empty (bounded), to catch processes
 * forked between passes.
 */
const CONTROL_SHELL = `while read -r sig pg; do
  case "$pg" in ''|*[!0-9]*) continue ;; esac
  if [ "$sig" = KILL ]; then
    i=0
    while [ "$i" -lt 500 ] && kill -s KILL -- "-$pg" 2>/dev/null; do i=$((i + 1)); done
  else
    kill -s "$sig" -- "-$pg" 2>/dev/null
  fi
done`;

const TERMINATING = new Set<SandboxSignal>(["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGKILL"]);
const noop = () => {};

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

function deferred<T>(): Deferred<T> {
  const { promise, resolve, reject } = Promise.withResolvers<T>();
  promise.catch(noop);
  return { promise, resolve, reject };
}

function delay(ms: number): Promise<undefined> {
  return new Promise((resolve) => setTimeout(() => resolve(undefined), ms).unref());
}

function toBytes(data: Uint8Array | string): Uint8Array {
  return typeof data === "string" ? Buffer.from(data) : data;
}

function envOf(env: ExecutorSpawnOptions["env"]): Record<string, string> | undefined {
  if (!env) return undefined;
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined) out[key] = value;
  return out;
}

/** Writes to an exec's stdin, waiting for `drain`; resolves (dropping the bytes) once the connection is gone. */
function writeAll(session: ExecSession, bytes: Uint8Array): Promise<void> {
  return new Promise((resolve) => {
    const stdin = session.stdin;
    if (stdin.destroyed || stdin.writableEnded) return resolve();
    const done = () => {
      stdin.off("drain", done);
      stdin.off("close", done);
      resolve();
    };
    if (stdin.write(bytes)) return resolve();
    stdin.once("drain", done);
    stdin.once("close", done);
  });
}

/** The control shell of one container, restarted on demand if it died. */
function createControlShell(options: DockerExecExecutorOptions) {
  let session: Promise<ExecSession | undefined> | undefined;

  function connect(): Promise<ExecSession | undefined> {
    session ??= options.driver
      .execDuplex(options.containerId, {
        cmd: ["sh", "-c", CONTROL_SHELL],
        user: options.user ?? SANDBOX_USER,
      })
      .then(
        (live) => {
          const forget = () => {
            session = undefined;
          };
          live.stream.on("close", forget);
          live.stream.on("error", noop);
          live.stdout.resume();
          live.stderr.resume();
          return live;
        },
        () => {
          session = undefined;
          return undefined;
        },
      );
    return session;
  }

  return {
    connect,
    /** Sends `signal` to process group `pgid`; falls back to a one-off `docker exec kill`. */
    async signal(signal: SandboxSignal, pgid: number): Promise<void> {
      const name = signal.slice(3);
      const live = await connect();
      if (live && !live.stream.destroyed) {
        await writeAll(live, Buffer.from(`${name} ${pgid}\n`)).catch(noop);
        return;
      }
      await options.driver
        .exec(options.containerId, {
          cmd: ["sh", "-c", `kill -s ${name} -- -${pgid}`],
          user: options.user ?? SANDBOX_USER,
        })
        .catch(noop);
    },
    close() {
      const current = session;
      session = undefined;
      void current?.then((live) => live?.close());
    },
  };
}

/** What `openPort` and `openTerminal` answer: `docker exec` carries neither. */
function agentRequired(what: string): SandboxError {
  return new SandboxError(
    "AGENT_REQUIRED",
    `sandbox ${what} need the in-container agent; this sandbox runs commands with docker exec (use dockerSandbox({ executor: "agent" }))`,
  );
}

/**
 * A {@link CommandExecutor} on `docker exec` (the pool driver's `execDuplex`): ~60-70 ms per command here, the
 * agent executor's fallback and `createTestSandbox`'s executor. Each
 * command runs under a small `sh` wrapper that reports its pid, which is its process group id; timeouts, aborts
 * and `kill()` signal that group through a per-container control shell (TERM, then KILL after a grace), so
 * background children die too.
 *
 * @example
 * const executor = createDockerExecExecutor({ driver, containerId });
 * const result = await executor.spawn({ argv: ["sh", "-c", "echo hi"], timeoutMs: 5_000 }).wait();
 */
export function createDockerExecExecutor(options: DockerExecExecutorOptions): CommandExecutor {
  const { driver, containerId } = options;
  const control = createControlShell(options);
  const running = new Set<{ pid: Promise<number> }>();
  let closed = false;

  // Start the control shell now: once a fork bomb has used up the pids limit, no new exec can start.
  void control.connect();

  function spawn(spawnOptions: ExecutorSpawnOptions): ExecutorProcess {
    const startedAt = performance.now();
    const maxOutputBytes = spawnOptions.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const graceMs = spawnOptions.forceKillAfterMs ?? DEFAULT_FORCE_KILL_AFTER_MS;
    const stdout = createOutputCollector(maxOutputBytes);
    const stderr = createOutputCollector(maxOutputBytes);
    const pid = deferred<number>();
    const result = deferred<ExecutorProcessResult>();
    const started = deferred<ExecSession>();
    let reason: TerminationReason | undefined;
    let done = false;
    let header = Buffer.alloc(0);
    let headerDone = false;
    let forceKillTimer: NodeJS.Timeout | undefined;
    let timeoutTimer: NodeJS.Timeout | undefined;
    const entry = { pid: pid.promise };

    if (closed) {
      const error = new SandboxError("CAPABILITY_UNAVAILABLE", "the sandbox executor is closed");
      pid.reject(error);
      result.reject(error);
      started.reject(error);
      return handle();
    }
    running.add(entry);

    const signalGroup = async (signal: SandboxSignal) => {
      const pgid = await pid.promise.catch(() => undefined);
      if (pgid !== undefined) await control.signal(signal, pgid);
    };

    const stop = (why: TerminationReason, signal: SandboxSignal = "SIGTERM", grace = graceMs) => {
      if (done) return;
      reason ??= why;
      void signalGroup(signal);
      if (signal !== "SIGKILL" && TERMINATING.has(signal) && !forceKillTimer) {
        forceKillTimer = setTimeout(() => {
          if (!done) void signalGroup("SIGKILL");
        }, grace);
        forceKillTimer.unref();
      }
    };

    const onAbort = () => stop("abort");
    const userSignal = spawnOptions.signal;
    if (userSignal?.aborted) reason = "abort";
    userSignal?.addEventListener("abort", onAbort, { once: true });
    if (spawnOptions.timeoutMs !== undefined) {
      timeoutTimer = setTimeout(() => stop("timeout"), Math.max(0, spawnOptions.timeoutMs));
      timeoutTimer.unref();
    }

    const deliver = (
      collector: ReturnType<typeof createOutputCollector>,
      callback: ((chunk: Uint8Array) => void) | undefined,
      chunk: Uint8Array,
    ) => {
      if (chunk.length === 0) return;
      collector.push(chunk);
      try {
        callback?.(chunk);
      } catch {
        // a callback's bug must not break the stream
      }
      if (collector.truncated && spawnOptions.onOutputLimit === "kill") stop("output-limit");
    };

    const cleanup = () => {
      done = true;
      running.delete(entry);
      userSignal?.removeEventListener("abort", onAbort);
      if (timeoutTimer) clearTimeout(timeoutTimer);
      if (forceKillTimer) clearTimeout(forceKillTimer);
    };

    void (async () => {
      let session: ExecSession;
      try {
        if (reason === "abort") throw userSignal?.reason ?? new Error("aborted");
        session = await driver.execDuplex(containerId, {
          cmd: ["sh", "-c", WRAPPER, "sh", spawnOptions.cwd ?? "", ...spawnOptions.argv],
          user: options.user ?? SANDBOX_USER,
          ...(spawnOptions.env ? { env: envOf(spawnOptions.env) ?? {} } : {}),
        });
      } catch (error) {
        cleanup();
        pid.reject(error);
        started.reject(error);
        result.reject(error);
        return;
      }
      started.resolve(session);
      session.stream.on("error", noop);

      const stdin = spawnOptions.stdin;
      if (stdin === undefined) session.stdin.end();
      else if (stdin !== "pipe") session.stdin.end(toBytes(stdin));

      const ended = Promise.all(
        [session.stdout, session.stderr].map(
          (stream) =>
            new Promise<void>((resolve) => {
              stream.on("close", resolve);
              stream.on("end", resolve);
              stream.on("error", () => resolve());
            }),
        ),
      );
      session.stdout.on("data", (chunk: Buffer) => {
        if (headerDone) return deliver(stdout, spawnOptions.onStdout, chunk);
        header = Buffer.concat([header, chunk]);
        if (header.length < PID_HEADER_BYTES) return;
        headerDone = true;
        const parsed = Number(header.subarray(0, PID_HEADER_BYTES).toString("latin1"));
        if (Number.isSafeInteger(parsed) && parsed > 0) pid.resolve(parsed);
        else pid.reject(new SandboxError("SANDBOX_PROTOCOL", "the command wrapper reported no pid"));
        deliver(stdout, spawnOptions.onStdout, header.subarray(PID_HEADER_BYTES));
      });
      session.stderr.on("data", (chunk: Buffer) => deliver(stderr, spawnOptions.onStderr, chunk));

      // `docker exec` holds the stream open ~2 s after the command exits while processes it started in the
      // background live on; its exit shows in the exec's state at once, so poll that and stop waiting early
      // (what background processes write later is not the command's output).
      let streamsEnded = false;
      void (async () => {
        await delay(EXIT_POLL_FIRST_MS);
        while (!streamsEnded) {
          const state = await session.inspect().catch(() => undefined);
          if (state && !state.running) {
            await delay(EXIT_DRAIN_MS);
            if (!streamsEnded) session.close();
            return;
          }
          await delay(EXIT_POLL_INTERVAL_MS);
        }
      })();
      await ended;
      streamsEnded = true;
      if (!headerDone) {
        // The wrapper never ran (e.g. the engine could not start the exec): what came is ordinary output.
        pid.reject(new SandboxError("CONTAINER_FAILED", "the command did not start"));
        deliver(stdout, spawnOptions.onStdout, header);
      }
      let state: { running: boolean; exitCode: number | null } = { running: true, exitCode: null };
      try {
        state = await session.inspect();
        for (let attempt = 0; state.running && attempt < 100; attempt++) {
          await new Promise((resolve) => setTimeout(resolve, 10));
          state = await session.inspect();
        }
      } catch (error) {
        session.close();
        cleanup();
        result.reject(
          new SandboxError("CONTAINER_FAILED", "lost the sandbox container while a command ran", {
            cause: error,
          }),
        );
        return;
      }
      session.close();
      if (reason !== undefined || spawnOptions.killGroupOnExit) {
        // The group leader is gone; make sure nothing it started outlives it (or a timeout, or an abort).
        await signalGroup("SIGKILL");
      }
      cleanup();
      if (state.running || state.exitCode === null) {
        result.reject(new SandboxError("CONTAINER_FAILED", "the command's exit status could not be read"));
        return;
      }
      result.resolve({
        exitCode: state.exitCode,
        stdout: stdout.bytes(),
        stderr: stderr.bytes(),
        truncated: { stdout: stdout.truncated, stderr: stderr.truncated },
        omittedBytes: { stdout: stdout.omittedBytes, stderr: stderr.omittedBytes },
        durationMs: Math.round((performance.now() - startedAt) * 100) / 100,
        terminationReason: reason ?? "exit",
      });
    })();

    function handle(): ExecutorProcess {
      return {
        pid: pid.promise,
        wait: () => result.promise,
        kill(signal = "SIGTERM", killOptions = {}) {
          if (done) {
            void signalGroup(signal);
            return;
          }
          if (TERMINATING.has(signal)) stop("abort", signal, killOptions.forceKillAfterMs ?? graceMs);
          else void signalGroup(signal);
        },
        async writeStdin(data) {
          if (spawnOptions.stdin !== "pipe") {
            throw new SandboxError("INVALID_ARGUMENT", "writeStdin needs spawn({ stdin: 'pipe' })");
          }
          const session = await started.promise;
          await writeAll(session, toBytes(data));
        },
        async closeStdin() {
          const session = await started.promise.catch(() => undefined);
          if (session && !session.stdin.writableEnded) session.stdin.end();
        },
      };
    }
    return handle();
  }

  const workspace = options.workspace ?? "/workspace";
  return {
    kind: "docker-exec",
    openPort: () => Promise.reject(agentRequired("ports")),
    openTerminal: () => {
      throw agentRequired("terminals");
    },
    spawn,
    readFile: (path, readOptions) => readFileByScript(spawn, workspace, path, readOptions),
    writeFiles: (files, writeOptions) => writeFilesByScript(spawn, workspace, files, writeOptions),
    async close() {
      if (closed) return;
      closed = true;
      await Promise.all(
        [...running].map(async (entry) => {
          const pgid = await Promise.race([entry.pid.catch(() => undefined), delay(1000)]);
          if (pgid !== undefined) await control.signal("SIGKILL", pgid);
        }),
      );
      control.close();
    },
  };
}
