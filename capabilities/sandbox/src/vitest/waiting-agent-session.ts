import type { Duplex } from "node:stream";
import { AGENT_FRAME_TYPES, AGENT_PATH, createFrameDecoder, FrameType } from "@pai/container-agent";
import type { ContainerDriver } from "@pai/pool";
import { SandboxError } from "../sandbox-error.ts";

/**
 * An in-container agent started ahead of time: its HELLO has arrived and is held, with everything after it, until
 * the connection is handed to a test worker.
 */
export interface WaitingAgentSession {
  /** False once the agent's connection has ended (the agent died, the container went away). */
  readonly alive: boolean;
  /**
   * Hands the connection over to `socket`: the bytes held so far, then the agent's output piped to the socket and
   * the socket piped to the agent's stdin. Either side ending or failing ends the other. Once only.
   */
  relay(socket: Duplex): void;
  /** Ends the connection (the agent exits on EOF). */
  close(): void;
}

/** Options of {@link openWaitingAgentSession}. */
export interface WaitingAgentSessionOptions {
  driver: ContainerDriver;
  containerId: string;
  /** @default 5000 */
  helloTimeoutMs?: number;
  signal?: AbortSignal;
}

/** Starts the container's agent (`docker exec`) and waits for its HELLO. */
export async function openWaitingAgentSession(
  options: WaitingAgentSessionOptions,
): Promise<WaitingAgentSession> {
  const { driver, containerId, signal } = options;
  const session = await driver.execDuplex(containerId, { cmd: [AGENT_PATH], ...(signal ? { signal } : {}) });
  session.stream.on("error", () => {});
  session.stderr.resume(); // the agent's log
  const held: Buffer[] = [];
  let alive = true;
  const onGone = () => {
    alive = false;
  };
  session.stdout.once("end", onGone);
  session.stdout.once("close", onGone);
  session.stream.once("close", onGone);

  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          finish(
            new SandboxError("SANDBOX_PROTOCOL", `the sandbox agent did not say HELLO in ${containerId}`),
          ),
        options.helloTimeoutMs ?? 5000,
      );
      const decoder = createFrameDecoder({
        frameTypes: AGENT_FRAME_TYPES,
        onFrame: (frame) => {
          finish(
            frame.type === FrameType.Hello && frame.requestId === 0
              ? undefined
              : new SandboxError(
                  "SANDBOX_PROTOCOL",
                  `the sandbox agent in ${containerId} did not start with HELLO`,
                ),
          );
        },
      });
      const onData = (chunk: Buffer) => {
        held.push(chunk);
        try {
          decoder.write(chunk);
        } catch (error) {
          finish(error);
        }
      };
      const onEnd = () =>
        finish(
          new SandboxError("SANDBOX_PROTOCOL", `the sandbox agent in ${containerId} exited before HELLO`),
        );
      const onAbort = () => finish(signal?.reason);
      function finish(error: unknown) {
        clearTimeout(timer);
        session.stdout.off("data", onData);
        session.stdout.off("end", onEnd);
        signal?.removeEventListener("abort", onAbort);
        // Whatever follows the HELLO stays in the stream until the relay starts.
        session.stdout.pause();
        if (error === undefined) resolve();
        else reject(error);
      }
      session.stdout.on("data", onData);
      session.stdout.once("end", onEnd);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  } catch (error) {
    session.close();
    throw error;
  }

  let relayed = false;
  return {
    get alive() {
      return alive;
    },
    relay(socket) {
      if (relayed) throw new Error("the agent session was already relayed");
      relayed = true;
      for (const chunk of held) socket.write(chunk);
      held.length = 0;
      session.stdout.pipe(socket);
      socket.pipe(session.stdin);
      socket.once("close", () => session.close());
      session.stream.once("close", () => socket.end());
    },
    close() {
      alive = false;
      session.close();
    },
  };
}
