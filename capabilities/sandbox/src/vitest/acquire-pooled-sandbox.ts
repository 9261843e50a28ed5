import { connect, type Socket } from "node:net";
import { Readable } from "node:stream";
import { AGENT_PATH } from "@pai/container-agent";
import { type ContainerDriver, createDockerDriver, type ExecSession } from "@pai/pool";
import { createAgentExecutor } from "../agent-executor.ts";
import { createSandboxFacade } from "../create-sandbox-facade.ts";
import { SandboxError } from "../sandbox-error.ts";
import type { SandboxFacade } from "../sandbox-facade.ts";
import { type PaiSandboxFixtureOptions, poolOptionsOf } from "./fixture-options.ts";
import { type PoolReply, parseMessage, readLine, replyError, writeMessage } from "./pool-wire.ts";
import type { SandboxPoolAddress } from "./sandbox-pool-server.ts";

/** A sandbox of the run's pool, held by this worker. */
export interface PooledSandbox {
  readonly facade: SandboxFacade;
  readonly containerId: string;
  /** Closes the agent connection and has the pool remove the container; resolves once it is gone. */
  release(): Promise<void>;
}

/** Options of {@link acquirePooledSandbox}. */
export interface AcquirePooledSandboxOptions {
  address: SandboxPoolAddress;
  options: PaiSandboxFixtureOptions;
  /** The engine, for file archives and the `docker exec` fallback. @default one `createDockerDriver()` per worker */
  driver?: ContainerDriver;
  signal?: AbortSignal;
}

let workerDriver: ContainerDriver | undefined;

/** One engine client per worker, made on first use. */
function sharedDriver(): ContainerDriver {
  workerDriver ??= createDockerDriver();
  return workerDriver;
}

function gone(): SandboxError {
  return new SandboxError("CAPABILITY_UNAVAILABLE", "the test run's sandbox pool closed the connection");
}

async function open(address: SandboxPoolAddress, signal: AbortSignal | undefined): Promise<Socket> {
  signal?.throwIfAborted();
  const socket = connect(address.path);
  await new Promise<void>((resolve, reject) => {
    const onAbort = () => socket.destroy(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    socket.once("connect", () => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    });
    socket.once("error", (error) => {
      signal?.removeEventListener("abort", onAbort);
      reject(
        signal?.aborted
          ? signal.reason
          : new SandboxError("CAPABILITY_UNAVAILABLE", "cannot reach the test run's sandbox pool", {
              cause: error,
              details: { path: address.path },
            }),
      );
    });
  });
  socket.on("error", () => {});
  return socket;
}

/** The next reply on the socket; rejects when it closes first or `signal` aborts (which destroys it). */
async function nextReply(socket: Socket, signal: AbortSignal | undefined): Promise<PoolReply> {
  const onAbort = () => socket.destroy();
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const reply = parseMessage(await readLine(socket)) as PoolReply | undefined;
    if (!reply) throw gone();
    return reply;
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw SandboxError.isInstance(error) ? error : gone();
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
}

/** The agent connection the pool relays, in the shape of the `docker exec` session it stands for. */
function relayedSession(socket: Socket): ExecSession {
  return {
    stream: socket,
    stdin: socket,
    stdout: socket,
    stderr: Readable.from([]),
    inspect: async () => ({ running: !socket.destroyed, exitCode: null }),
    close: () => socket.destroy(),
  };
}

/**
 * A driver whose first `docker exec` of the agent in `containerId` is answered by the relayed session; every
 * other call (archives, a restarted agent, the `docker exec` fallback) goes to the engine.
 */
function withRelayedAgent(
  driver: ContainerDriver,
  containerId: string,
  session: ExecSession,
): ContainerDriver {
  let waiting: ExecSession | undefined = session;
  const relayed: ContainerDriver = Object.create(driver);
  relayed.execDuplex = (id, options) => {
    if (waiting && id === containerId && options.cmd.length === 1 && options.cmd[0] === AGENT_PATH) {
      const taken = waiting;
      waiting = undefined;
      return Promise.resolve(taken);
    }
    return driver.execDuplex(id, options);
  };
  return relayed;
}

/**
 * Takes a fresh sandbox from the run's pool: a lease connection, then the container's agent connection relayed
 * by the pool process, wrapped in the facade tools get.
 */
export async function acquirePooledSandbox(request: AcquirePooledSandboxOptions): Promise<PooledSandbox> {
  const { address, options, signal } = request;
  const driver = request.driver ?? sharedDriver();
  const lease = await open(address, signal);
  try {
    writeMessage(lease, { type: "acquire", secret: address.secret, options: poolOptionsOf(options) });
    const reply = await nextReply(lease, signal);
    if (reply.type === "error") throw replyError(reply);
    if (reply.type !== "acquired") throw gone();
    const agentSocket = await open(address, signal);
    writeMessage(agentSocket, { type: "agent", secret: address.secret, token: reply.token });
    const executor = await createAgentExecutor({
      driver: withRelayedAgent(driver, reply.containerId, relayedSession(agentSocket)),
      containerId: reply.containerId,
      agentPath: AGENT_PATH,
      // Should the relayed agent be gone already, commands start on `docker exec` while a fresh agent starts.
      requireAgent: false,
      signal,
    }).catch((error: unknown) => {
      agentSocket.destroy();
      throw error;
    });
    const facade = createSandboxFacade({
      executor,
      driver,
      containerId: reply.containerId,
      image: reply.image,
      ...(options.shell ? { shell: options.shell } : {}),
      ...(options.maxOutputBytes !== undefined ? { maxOutputBytes: options.maxOutputBytes } : {}),
    });
    let releasing: Promise<void> | undefined;
    return {
      facade,
      containerId: reply.containerId,
      release() {
        releasing ??= (async () => {
          writeMessage(lease, { type: "release" });
          const [released] = await Promise.all([nextReply(lease, undefined), executor.close()]);
          lease.destroy();
          if (released.type === "error") throw replyError(released);
        })();
        return releasing;
      },
    };
  } catch (error) {
    lease.destroy();
    throw error;
  }
}
