import { setTimeout as sleep } from "node:timers/promises";
import type { CommandResult, SandboxFacade, SandboxProcess } from "@pai/sandbox";

/** What {@link waitForPort} accepts. */
export interface WaitForPortOptions {
  sandbox: Pick<SandboxFacade, "runCommand">;
  /** The TCP port inside the sandbox, on 127.0.0.1. */
  port: number;
  /** The process expected to listen: waiting ends early when it exits. */
  server: Pick<SandboxProcess, "wait">;
  /** How long to wait for the port to answer. */
  timeoutMs: number;
  /** Between two probes. @default 250 */
  intervalMs?: number;
  signal?: AbortSignal;
}

/** How {@link waitForPort} ended: the port answered, the server exited first, or the time ran out. */
export type PortWait =
  | { outcome: "listening" }
  | { outcome: "exited"; result: CommandResult }
  | { outcome: "timeout" };

/**
 * Probes `port` inside the sandbox (a TCP connect to 127.0.0.1 with bash's `/dev/tcp`) until it accepts, the
 * server process exits, or `timeoutMs` passes. Rejects only with the signal's reason (or a sandbox error).
 */
export async function waitForPort(options: WaitForPortOptions): Promise<PortWait> {
  const { sandbox, port, server, timeoutMs, intervalMs = 250, signal } = options;
  let exited: CommandResult | undefined;
  let waitFailed: unknown;
  server.wait().then(
    (result) => {
      exited = result;
    },
    (error: unknown) => {
      waitFailed = error;
    },
  );
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await answers({ sandbox, port, signal })) return { outcome: "listening" };
    if (waitFailed !== undefined) throw waitFailed;
    if (exited) return { outcome: "exited", result: exited };
    if (Date.now() >= deadline) return { outcome: "timeout" };
    await sleep(intervalMs, undefined, signal ? { signal } : {}).catch((error: unknown) => {
      signal?.throwIfAborted(); // with the signal's own reason, not the timer's AbortError
      throw error;
    });
  }
}

/** Whether something accepts a TCP connection on 127.0.0.1:`port` inside the sandbox right now. */
export async function answers(options: {
  sandbox: Pick<SandboxFacade, "runCommand">;
  port: number;
  signal?: AbortSignal | undefined;
}): Promise<boolean> {
  const probe = await options.sandbox.runCommand({
    command: "bash",
    args: ["-c", 'exec 3<>"/dev/tcp/127.0.0.1/$0"', String(options.port)],
    timeoutMs: 5_000,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (probe.terminationReason === "abort") options.signal?.throwIfAborted();
  return probe.exitCode === 0;
}
