import type { Duplex } from "node:stream";
import type { ContainerDriver } from "@pai/pool";
import { type AgentClient, createAgentClient } from "./agent-client.ts";
import type { AgentHello } from "./agent-protocol.ts";
import { AGENT_PATH } from "./agent-volume.ts";
import { ContainerAgentError } from "./container-agent-error.ts";

/** Options of {@link connectContainerAgent}. */
export interface ConnectContainerAgentOptions {
  driver: ContainerDriver;
  containerId: string;
  /** The agent binary inside the container. @default "/opt/pai/pai-agent" */
  agentPath?: string | undefined;
  /** `uid:gid` the agent runs as. @default the container's user */
  user?: string | undefined;
  /** How long to wait for the agent's HELLO. @default 5000 */
  helloTimeoutMs?: number | undefined;
  /**
   * Stdin bytes per command in flight (see `createAgentClient`).
   * @default 4194304, so bulk stdin keeps the exec pipe full
   */
  stdinWindowBytes?: number | undefined;
  /** Called once when the connection ends (`undefined` after `close()`). */
  onClose?: ((error: ContainerAgentError | undefined) => void) | undefined;
  /**
   * The connection of an agent that dialled in (`pai-agent --dial`, see `createAgentDialSocket`): served instead
   * of starting one with `docker exec`.
   */
  dialled?: Duplex | undefined;
  /** Aborts connecting. The live connection is not tied to it. */
  signal?: AbortSignal | undefined;
}

/** A live connection to the agent of one container. */
export interface ContainerAgentConnection {
  readonly client: AgentClient;
  readonly hello: AgentHello;
  /**
   * Ends the connection (the agent kills its commands and exits; a dialled one's parent stays, idle, as the
   * container's main process) and the exec session; at most ~250 ms.
   */
  close(): Promise<void>;
}

const DEFAULT_HELLO_TIMEOUT_MS = 5000;
const CLOSE_WAIT_MS = 250;

function withDeadline<T>(promise: Promise<T>, ms: number, signal: AbortSignal | undefined): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(
          new ContainerAgentError(
            "SANDBOX_PROTOCOL",
            `the container agent did not say HELLO within ${ms} ms`,
          ),
        ),
      ms,
    );
    const onAbort = () => reject(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    });
  });
}

/** A dialled agent's connection in the shape of an exec session: frames both ways, no log stream. */
function dialledSession(socket: Duplex) {
  return { stream: socket, stdin: socket, stdout: socket, stderr: undefined, close: () => socket.destroy() };
}

/**
 * Starts `pai-agent` in a running container with one `docker exec` session (stdin/stdout carry the frames,
 * stderr is the agent's log) and waits for its HELLO. That session is the one channel between host and
 * container: commands, the Chromium DevTools pipe and the egress tunnel all travel over it, so it works with a
 * remote engine (`DOCKER_HOST`) and nothing listens anywhere. With `dialled`, the agent is the container's
 * main process and already connected to this process's dial socket: no exec, the same frames.
 *
 * @example
 * const agent = await connectContainerAgent({ driver, containerId, signal });
 * const result = await agent.client.spawn({ argv: ["true"] }).wait();
 * await agent.close();
 */
export async function connectContainerAgent(
  options: ConnectContainerAgentOptions,
): Promise<ContainerAgentConnection> {
  const { driver, containerId, signal } = options;
  signal?.throwIfAborted();
  const session = options.dialled
    ? dialledSession(options.dialled)
    : await driver.execDuplex(containerId, {
        cmd: [options.agentPath ?? AGENT_PATH],
        ...(options.user !== undefined ? { user: options.user } : {}),
      });
  session.stream.on("error", () => {});
  session.stderr?.resume(); // the agent's log
  const client = createAgentClient({
    stream: { readable: session.stdout, writable: session.stdin },
    stdinWindowBytes: options.stdinWindowBytes ?? 4 * 1024 * 1024,
    onClose: (error) => {
      session.close();
      options.onClose?.(error);
    },
  });
  // A dialled connection was held paused until someone reads it: the client does now.
  options.dialled?.resume();
  const close = async () => {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        client.close(),
        new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS))),
      ]);
    } finally {
      // A close that finished first must not leave the wait pending: it would hold the process open.
      clearTimeout(timer);
    }
    session.close();
  };
  try {
    const hello = await withDeadline(
      client.hello,
      options.helloTimeoutMs ?? DEFAULT_HELLO_TIMEOUT_MS,
      signal,
    );
    return { client, hello, close };
  } catch (error) {
    await close();
    if (signal?.aborted) throw signal.reason;
    throw ContainerAgentError.isInstance(error)
      ? error
      : new ContainerAgentError("SANDBOX_PROTOCOL", `the container agent did not start in ${containerId}`, {
          cause: error,
        });
  }
}
