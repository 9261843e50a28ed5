import { randomBytes } from "node:crypto";
import { unlinkSync } from "node:fs";
import { chmod, readdir, unlink } from "node:fs/promises";
import { createServer, type Socket } from "node:net";
import { join } from "node:path";

/** The first line an agent sends on the egress socket: `PAI-EGRESS/1 <token>\n`. */
const HEADER = /^PAI-EGRESS\/1 ([\x21-\x7e]{1,128})$/;
const MAX_HEADER_BYTES = 160;
/** How long a connection may take to say its header. */
const HEADER_TIMEOUT_MS = 5_000;
/**
 * Connections that have not said their header yet; past it the oldest is closed (an agent sends its header as it
 * connects, so only connections holding back theirs grow old: a program cannot crowd the agents out).
 */
const MAX_UNIDENTIFIED = 64;

/** A token admitted by {@link EgressSocket.admit}. */
export interface EgressAdmission {
  /** What the agent must send (random, 256 bits); give it to the agent only, over its own connection. */
  readonly token: string;
  /** Stops admitting the token (connections already handed over are not touched). Idempotent. */
  revoke(): void;
}

/** A unix socket of this process that agents relay their containers' egress connections to. */
export interface EgressSocket {
  /** The socket's file name in its directory. */
  readonly fileName: string;
  /**
   * Admits connections that present a fresh token: each is handed to `handle` after its header line (the bytes
   * after it stay in the socket). A connection with any other token, or none within 5 s, is closed and seen by
   * no handler.
   */
  admit(handle: (socket: Socket) => void): EgressAdmission;
  /** Connections refused for a wrong or missing token so far (or closed as the oldest without one). */
  refused(): number;
  /** Connections open now that have not said their header yet. */
  pending(): number;
  /** Stops listening, removes the socket file and closes the connections not yet handed over. */
  close(): Promise<void>;
}

function isDeadPid(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ESRCH";
  }
}

/**
 * Listens on `<directory>/<pid>.sock` (mode 0666: a container's user must be able to connect; the token is what
 * admits) after removing the sockets of processes that are gone. The directory must exist and be this
 * process's. The server does not keep the process alive, and the file is removed when the process exits.
 *
 * @example
 * const socket = await createEgressSocket({ directory: "/run/pai-egress" });
 * const { token } = socket.admit((connection) => proxy.handle(connection));
 */
export async function createEgressSocket(options: { directory: string }): Promise<EgressSocket> {
  const fileName = `${process.pid}.sock`;
  const path = join(options.directory, fileName);
  for (const name of await readdir(options.directory)) {
    const pid = /^(\d+)\.sock$/.exec(name)?.[1];
    if (pid !== undefined && (Number(pid) === process.pid || isDeadPid(Number(pid)))) {
      await unlink(join(options.directory, name)).catch(() => undefined);
    }
  }
  const handlers = new Map<string, (socket: Socket) => void>();
  const unidentified = new Set<Socket>();
  let refusedCount = 0;

  const server = createServer((socket) => {
    socket.on("error", () => {});
    if (unidentified.size >= MAX_UNIDENTIFIED) {
      const oldest = unidentified.values().next().value as Socket;
      refusedCount++;
      oldest.destroy(); // its "close" forgets it
      unidentified.delete(oldest);
    }
    unidentified.add(socket);
    let head: Buffer = Buffer.alloc(0);
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
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      const end = head.indexOf(10);
      if (end < 0) {
        if (head.length > MAX_HEADER_BYTES) refuse();
        return;
      }
      const token = HEADER.exec(head.subarray(0, end).toString("latin1"))?.[1];
      const handle = token === undefined ? undefined : handlers.get(token);
      if (!handle) return refuse();
      done();
      socket.pause();
      const rest = head.subarray(end + 1);
      if (rest.length > 0) socket.unshift(rest);
      handle(socket);
      // The handler has attached its readers; the bytes after the header flow to them.
      socket.resume();
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

  return {
    fileName,
    admit(handle) {
      const token = randomBytes(32).toString("base64url");
      handlers.set(token, handle);
      return { token, revoke: () => void handlers.delete(token) };
    },
    refused: () => refusedCount,
    pending: () => unidentified.size,
    async close() {
      process.off("exit", removeFile);
      handlers.clear();
      for (const socket of unidentified) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
