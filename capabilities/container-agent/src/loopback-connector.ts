import { type ChildProcess, spawn } from "node:child_process";
import type { Socket } from "node:net";
import { spliceBytes } from "@pai/core";
import { ContainerAgentError } from "./container-agent-error.ts";
import { findPrebuiltBinary } from "./prebuilt-binary.ts";
import { spliceFrom } from "./splice-socket-bytes.ts";

/**
 * Connections to ports on one container's loopback made from this machine, each a plain `net.Socket` whose bytes go
 * straight between this process and the container's server (see {@link openLoopbackConnector}).
 */
export interface LoopbackConnector {
  /**
   * A new connection to `port` (1–65535) on the container's loopback. Rejects with `SANDBOX_PORT_CLOSED` when nothing
   * listens there, `SANDBOX_CONNECT_FAILED` for another failure (the connector closed, out of descriptors, a server
   * that does not accept within 10 s), or `signal`'s reason.
   */
  connect(port: number, signal?: AbortSignal): Promise<Socket>;
  /** Ends the helper (its connections stay open); later connects reject. */
  close(): void;
}

/** What the helper says on its channel (native/pai-port-connect.c). */
interface HelperMessage {
  ready?: number;
  id?: number;
  error?: string;
}

interface Waiting {
  port: number;
  resolve(socket: Socket): void;
  reject(error: unknown): void;
}

let binary: Promise<string | undefined> | undefined;

/** This machine's `pai-port-connect`, looked up once; `undefined` where the package ships none. */
function connectBinary(): Promise<string | undefined> {
  binary ??= findPrebuiltBinary({ program: "pai-port-connect", architecture: process.arch }).catch(
    () => undefined,
  );
  return binary;
}

function connectError(port: number, errnoName: string): ContainerAgentError {
  return errnoName === "ECONNREFUSED"
    ? new ContainerAgentError("SANDBOX_PORT_CLOSED", `nothing listens on port ${port} in the container`, {
        details: { port },
      })
    : new ContainerAgentError(
        "SANDBOX_CONNECT_FAILED",
        `cannot connect to port ${port} in the container: ${errnoName}`,
        {
          details: { port, errnoName },
        },
      );
}

/** Resolves when the helper says it is ready, `false` when it exits (or cannot start) first. */
function helperReady(child: ChildProcess): Promise<boolean> {
  return new Promise((resolve) => {
    const onMessage = (message: HelperMessage) => {
      if (message.ready !== 1) return;
      settle(true);
    };
    const settle = (ready: boolean) => {
      child.off("message", onMessage);
      child.off("exit", onExit);
      child.off("error", onExit);
      resolve(ready);
    };
    const onExit = () => settle(false);
    child.on("message", onMessage);
    child.once("exit", onExit);
    child.once("error", onExit);
  });
}

/**
 * Starts `pai-port-connect` (native/pai-port-connect.c) in the network namespace at `networkNamespace` (a container's,
 * as its engine names it: Docker's `SandboxKey`) and resolves with a {@link LoopbackConnector} over it: each connect
 * is made by the helper inside the namespace and the connected socket handed to this process over a Node IPC channel
 * (the descriptor passed as Node passes a socket to a child), so no process relays the connection's bytes. Each socket
 * also offers the kernel copy of large bodies (`spliceBytes`). Resolves `undefined` when that cannot be done here —
 * the package has no helper for this machine, the namespace is not this machine's (an engine elsewhere, a rootless
 * engine's own mount namespace) or this process may not enter it (not root) — and the caller connects another way.
 * The helper holds the namespace while it runs: close the connector when the container stops.
 */
export async function openLoopbackConnector(options: {
  networkNamespace: string;
  signal?: AbortSignal | undefined;
}): Promise<LoopbackConnector | undefined> {
  const program = await connectBinary();
  if (!program || options.signal?.aborted) return undefined;
  const child = spawn(program, [options.networkNamespace], {
    stdio: ["ignore", "ignore", "ignore", "ipc"],
    serialization: "json",
  });
  const ready = await helperReady(child);
  if (!ready) {
    child.kill("SIGKILL");
    return undefined;
  }
  // Neither the helper nor its channel keeps this process alive: a connect under way belongs to a request that does.
  child.unref();
  child.channel?.unref();
  return loopbackConnector(child);
}

function loopbackConnector(child: ChildProcess): LoopbackConnector {
  const waiting = new Map<number, Waiting>();
  let nextId = 1;
  let closed = false;
  child.on("message", (message: HelperMessage, socket: Socket | undefined) => {
    const entry = message.id === undefined ? undefined : waiting.get(message.id);
    if (!entry) {
      socket?.destroy(); // asked for by a connect that was aborted
      return;
    }
    waiting.delete(message.id!);
    if (!socket) {
      entry.reject(connectError(entry.port, message.error ?? "EIO"));
      return;
    }
    // As a port's connection through the agent: the server ending its side leaves this side writable.
    socket.allowHalfOpen = true;
    // Its bytes may also be moved to another socket in the kernel (a preview's large response body).
    Object.defineProperty(socket, spliceBytes, { value: spliceFrom(socket) });
    entry.resolve(socket);
  });
  const failAll = () => {
    closed = true;
    for (const [id, entry] of waiting) {
      waiting.delete(id);
      entry.reject(connectError(entry.port, "the connector closed"));
    }
  };
  child.once("exit", failAll);
  child.on("error", () => {}); // a send on a closed channel: the exit follows
  return {
    connect(port, signal) {
      if (!Number.isInteger(port) || port < 1 || port > 65535) {
        return Promise.reject(
          new ContainerAgentError("INVALID_ARGUMENT", `port must be an integer from 1 to 65535, not ${port}`),
        );
      }
      if (closed || !child.connected) return Promise.reject(connectError(port, "the connector closed"));
      if (signal?.aborted) return Promise.reject(signal.reason);
      const id = nextId++;
      return new Promise<Socket>((resolve, reject) => {
        const onAbort = () => {
          waiting.delete(id);
          reject(signal?.reason);
        };
        signal?.addEventListener("abort", onAbort, { once: true });
        const done = () => signal?.removeEventListener("abort", onAbort);
        waiting.set(id, {
          port,
          resolve: (socket) => {
            done();
            resolve(socket);
          },
          reject: (error) => {
            done();
            reject(error);
          },
        });
        child.send({ id, port }, (error) => {
          const entry = error ? waiting.get(id) : undefined;
          if (!entry) return;
          waiting.delete(id);
          entry.reject(connectError(port, "the connector closed"));
        });
      });
    },
    close() {
      if (closed) return;
      failAll();
      if (child.connected) child.disconnect(); // the helper ends when its channel does
      child.kill("SIGKILL");
    },
  };
}
