import { randomBytes } from "node:crypto";
import { unlinkSync } from "node:fs";
import { chmod, unlink } from "node:fs/promises";
import { createServer, type Socket } from "node:net";
import { basename } from "node:path";
import type { AgentDialBack } from "./agent-connect.ts";
import { ContainerAgentError } from "./container-agent-error.ts";
import { createHeadReader } from "./head-reader.ts";
import { claimSocketPath } from "./host-socket-directory.ts";

/** The first line a dialling agent sends: `PAI-AGENT/1 <token>\n` (see `pai-agent --dial`). */
const HEADER = /^PAI-AGENT\/1 ([\x21-\x7e]{1,128})$/;
/** The longest header line (without its newline) read; a longer one is refused, however it is split. */
const MAX_HEADER_BYTES = 160;
/** How long a connection may take to say its header. */
const HEADER_TIMEOUT_MS = 5_000;
/**
 * Connections that have not said their header yet; past it the oldest is closed (an agent says its header as it
 * connects, so only connections holding theirs back grow old: a program cannot crowd the agents out).
 */
const MAX_UNIDENTIFIED = 64;
/** How long a token waits for its agent before it is forgotten (a container that was never made or started). */
const TOKEN_LIFETIME_MS = 120_000;
/** How long a dial-back token waits for its connection: one CONNECT's, which comes at once or never. */
const DIAL_BACK_LIFETIME_MS = 10_000;
const FILE_SUFFIX = ".agent.sock";

/** A unix socket of this process that agents started with `--dial` connect to; see {@link createAgentDialSocket}. */
export interface AgentDialSocket {
  /** The socket's file name in its directory: `<pid>.agent.sock`. */
  readonly fileName: string;
  /**
   * Issues a token (random, 256 bits) for one container: give it to that container only (`PAI_AGENT_TOKEN`).
   * It is admitted once, and forgotten after two minutes without {@link AgentDialSocket.connection}.
   */
  admit(): string;
  /**
   * Admits `token` (one {@link AgentDialSocket.admit} issued) once more, for the next start of its container: only
   * while nothing runs in that container (it is stopped), so that its own agent is the first to dial.
   */
  readmit(token: string): void;
  /**
   * The connection of the agent that dials (or dialled) with `token`, the header read and the bytes after it left
   * in the socket. Rejects with `SANDBOX_PROTOCOL` when none came within `timeoutMs` or the token is unknown, and
   * with the signal's reason on abort; the token is spent either way.
   */
  connection(
    token: string,
    options: { timeoutMs: number; signal?: AbortSignal | undefined },
  ): Promise<Socket>;
  /**
   * A way back here for one connection to a container's port (`AgentClient.connect`'s `hostSocket`): a fresh token,
   * admitted once and for ten seconds, and `path`, where the container sees this socket.
   */
  dialBack(path: string): AgentDialBack;
  /** Connections closed for a wrong, spent or missing token so far (or as the oldest without one). */
  refused(): number;
  /**
   * Stops listening, removes the socket file and closes the connections not yet handed over (those handed over
   * stay open).
   */
  close(): Promise<void>;
}

/** A token's state: its agent's connection once it dialled, and who waits for it. */
interface Waiter {
  socket?: Socket;
  deliver?: (socket: Socket) => void;
  expiry: ReturnType<typeof setTimeout>;
}

/**
 * Listens on `<directory>/<pid>.agent.sock` (mode 0666: a container's user must be able to connect; the token
 * is what admits) after removing the sockets of processes that are gone. A container created with
 * `pai-agent --dial` as its main process and `PAI_AGENT_DIAL`/`PAI_AGENT_TOKEN` in its environment connects
 * here as it starts, so the host reaches its agent without a `docker exec` (engine work per container). Each
 * token is admitted once: a program in the container that later learns it (from `/proc/1/environ`) is refused.
 * The directory must exist and be this process's. The server does not keep the process alive.
 *
 * @example
 * const dial = await createAgentDialSocket({ directory: "/run/pai-egress" });
 * const token = dial.admit(); // the container's PAI_AGENT_TOKEN
 * const socket = await dial.connection(token, { timeoutMs: 10_000 });
 */
export async function createAgentDialSocket(options: { directory: string }): Promise<AgentDialSocket> {
  const path = await claimSocketPath(options.directory, FILE_SUFFIX);
  const fileName = basename(path);
  const waiters = new Map<string, Waiter>();
  const unidentified = new Set<Socket>();
  let refusedCount = 0;

  const server = createServer((socket) => {
    socket.on("error", () => {});
    if (unidentified.size >= MAX_UNIDENTIFIED) {
      const oldest = unidentified.values().next().value as Socket;
      refusedCount++;
      oldest.destroy();
      unidentified.delete(oldest);
    }
    unidentified.add(socket);
    const reader = createHeadReader({ terminator: "\n", maxBytes: MAX_HEADER_BYTES });
    const refuse = () => {
      refusedCount++;
      done();
      socket.destroy();
    };
    const timer = setTimeout(refuse, HEADER_TIMEOUT_MS);
    const done = () => {
      clearTimeout(timer);
      unidentified.delete(socket);
      socket.off("data", onData);
      socket.off("close", done);
    };
    const onData = (chunk: Buffer) => {
      const reading = reader.push(chunk);
      if (reading.state === "incomplete") return;
      if (reading.state === "too-large") return refuse();
      const token = HEADER.exec(reading.head.toString("latin1"))?.[1];
      const waiter = token === undefined ? undefined : waiters.get(token);
      if (!waiter || waiter.socket) return refuse(); // unknown, or spent
      done();
      socket.pause();
      if (reading.rest.length > 0) socket.unshift(reading.rest);
      waiter.socket = socket;
      waiter.deliver?.(socket);
    };
    socket.on("data", onData);
    socket.once("close", done);
  });
  server.unref();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => {
      server.off("error", reject);
      resolve();
    });
  });
  await chmod(path, 0o666);
  const removeFile = () => {
    try {
      unlinkSync(path); // the process is exiting: nothing asynchronous runs any more
    } catch {
      // already gone
    }
  };
  process.once("exit", removeFile);

  /** Forgets `token`; its connection, if one came and was not handed over, is closed. */
  function spend(token: string): void {
    const waiter = waiters.get(token);
    if (!waiter) return;
    waiters.delete(token);
    clearTimeout(waiter.expiry);
    if (!waiter.deliver) waiter.socket?.destroy();
  }

  function admitFor(token: string, lifetimeMs: number): void {
    spend(token);
    const expiry = setTimeout(() => spend(token), lifetimeMs);
    expiry.unref();
    waiters.set(token, { expiry });
  }

  function admit(lifetimeMs = TOKEN_LIFETIME_MS): string {
    const token = randomBytes(32).toString("base64url");
    admitFor(token, lifetimeMs);
    return token;
  }

  function connection(
    token: string,
    { timeoutMs, signal }: { timeoutMs: number; signal?: AbortSignal | undefined },
  ): Promise<Socket> {
    return new Promise<Socket>((resolve, reject) => {
      const waiter = waiters.get(token);
      if (!waiter || waiter.deliver) {
        return reject(new ContainerAgentError("SANDBOX_PROTOCOL", "no agent is expected with this token"));
      }
      const settle = (outcome: { socket: Socket } | { error: unknown }) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        spend(token);
        if ("socket" in outcome) resolve(outcome.socket);
        else reject(outcome.error);
      };
      const timer = setTimeout(
        () =>
          settle({
            error: new ContainerAgentError(
              "SANDBOX_PROTOCOL",
              `the container's agent did not dial in within ${timeoutMs} ms`,
            ),
          }),
        timeoutMs,
      );
      const onAbort = () => settle({ error: signal?.reason });
      waiter.deliver = (socket) => settle({ socket });
      if (waiter.socket) return waiter.deliver(waiter.socket);
      if (signal?.aborted) return onAbort();
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  function dialBack(containerPath: string): AgentDialBack {
    const token = admit(DIAL_BACK_LIFETIME_MS);
    return {
      path: containerPath,
      token,
      accept: ({ signal }) => connection(token, { timeoutMs: DIAL_BACK_LIFETIME_MS, signal }),
    };
  }

  return {
    fileName,
    admit: () => admit(),
    readmit: (token) => admitFor(token, TOKEN_LIFETIME_MS),
    connection,
    dialBack,
    refused: () => refusedCount,
    async close() {
      process.off("exit", removeFile);
      for (const token of [...waiters.keys()]) spend(token);
      for (const socket of unidentified) socket.destroy();
      // Stops accepting at once; connections handed over are their holders' to end.
      server.close();
      await unlink(path).catch(() => undefined);
    },
  };
}
