import { randomBytes } from "node:crypto";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { type ContainerDriver, createDockerDriver, PoolError } from "@pai/pool";
import { SandboxError } from "../sandbox-error.ts";
import { type PaiSandboxPoolOptions, poolKeyOf, poolOptionsOf } from "./fixture-options.ts";
import {
  endWithMessage,
  errorReply,
  type PoolReply,
  parseMessage,
  readLine,
  secretMatches,
  writeMessage,
} from "./pool-wire.ts";
import { createReadySandboxPool, type ReadySandbox, type ReadySandboxPool } from "./ready-sandbox-pool.ts";
import { reapDeadRuns, runnerPoolId } from "./reap-dead-runs.ts";
import {
  createRunnerOwner,
  defaultStateDirectory,
  machineLivenessProbe,
  pruneRunnerRecords,
} from "./runner-owner.ts";

/** Where test workers reach the run's pool: handed to them with Vitest's `provide`. */
export interface SandboxPoolAddress {
  /** The unix socket (a named pipe on Windows) in a directory only this user can open. */
  path: string;
  /** Sent first on every connection. */
  secret: string;
}

/** Options of {@link createSandboxPoolServer}. */
export interface SandboxPoolServerOptions {
  /** Fixture options whose pools are made and warmed at once, before any test asks. */
  warm?: readonly PaiSandboxPoolOptions[];
  /** @default createDockerDriver() */
  driver?: ContainerDriver;
  /** Heartbeat records of runs (see `PAI_SANDBOX_STATE_DIR`). @default `<tmpdir>/pai-sandbox-vitest-<uid>` */
  stateDirectory?: string;
  /** How often containers of dead runs are looked for, after the sweep at start. @default 30000 */
  reapIntervalMs?: number;
  /** Told about problems no test sees: a failed refill, a failed sweep. @default console.warn */
  onWarning?: (message: string, error: unknown) => void;
}

/** A run's sandbox pools, served to its test workers. See {@link createSandboxPoolServer}. */
export interface SandboxPoolServer {
  readonly address: SandboxPoolAddress;
  /** This run's owner id (on its containers, through their pool id). */
  readonly ownerId: string;
  /** Resolves when the sweep for dead runs' containers made at start has finished. */
  readonly swept: Promise<void>;
  /** The pool of `options`, made (and warmed to `pool.min`) on first use. */
  pool(options: PaiSandboxPoolOptions): ReadySandboxPool;
  /** Stops serving, removes every container of the run and the owner record. */
  close(): Promise<void>;
}

const FIRST_LINE_TIMEOUT_MS = 10_000;

/**
 * The pool process of a test run (Vitest's global setup): one `ReadySandboxPool` per set of fixture options,
 * shared by every test file and worker of the run, served over a local socket. A lease lasts until the worker
 * releases it or its connection drops; the agent connection of each sandbox is relayed byte for byte, so the
 * worker's first command costs a round trip through this process rather than a `docker exec`.
 *
 * The run has an owner id (`vitest:<host>:<pid>:<start ticks>:<random>`) carried by its containers' pool id, and
 * a heartbeat record; at start and then every `reapIntervalMs` it removes what runs that are no longer alive left
 * behind.
 */
export async function createSandboxPoolServer(
  options: SandboxPoolServerOptions = {},
): Promise<SandboxPoolServer> {
  const driver = options.driver ?? createDockerDriver();
  const stateDirectory = options.stateDirectory ?? defaultStateDirectory();
  const warn = options.onWarning ?? ((message, error) => console.warn(`[pai sandbox] ${message}`, error));
  const owner = await createRunnerOwner({ stateDirectory });
  const path =
    process.platform === "win32"
      ? `\\\\.\\pipe\\pai-sandbox-${randomBytes(8).toString("hex")}`
      : join(owner.directory, "pool.sock");
  const secret = randomBytes(32).toString("hex");
  const pools = new Map<string, ReadySandboxPool>();
  /** Leased sandboxes whose agent connection has not been claimed yet, by token. */
  const unclaimed = new Map<string, ReadySandbox>();
  const sockets = new Set<Socket>();
  const closing = new AbortController();
  let closed = false;

  const sweep = async () => {
    try {
      const probe = await machineLivenessProbe(stateDirectory);
      await reapDeadRuns({ driver, probe, signal: closing.signal });
      await pruneRunnerRecords(stateDirectory, probe);
    } catch (error) {
      // Without an engine there is nothing to sweep; a test that needs a sandbox says so itself.
      if (!closing.signal.aborted && !PoolError.hasCode(error, "DOCKER_UNAVAILABLE")) {
        warn("could not sweep the containers of dead test runs", error);
      }
    }
  };
  const swept = sweep();
  const sweeper = setInterval(() => void sweep(), options.reapIntervalMs ?? 30_000);
  sweeper.unref();

  function pool(poolOptions: PaiSandboxPoolOptions): ReadySandboxPool {
    if (closed) throw new PoolError("POOL_CLOSED", "the test run's sandbox pool is closed");
    const key = poolKeyOf(poolOptions);
    let existing = pools.get(key);
    if (!existing) {
      existing = createReadySandboxPool({
        options: poolOptionsOf(poolOptions),
        poolId: runnerPoolId(owner.id, key),
        driver,
        onRefillError: (error) => warn("could not prepare a sandbox in the background", error),
      });
      pools.set(key, existing);
      void existing.warm();
    }
    return existing;
  }

  function serveLease(socket: Socket, poolOptions: PaiSandboxPoolOptions): void {
    const gone = new AbortController();
    let sandbox: ReadySandbox | undefined;
    let token: string | undefined;
    const release = async (): Promise<PoolReply> => {
      if (token) unclaimed.delete(token);
      try {
        await sandbox?.release();
        return { type: "released" };
      } catch (error) {
        return errorReply(error);
      }
    };
    socket.once("close", () => {
      gone.abort();
      void release();
    });
    readLine(socket).then(
      (line) => {
        if (parseMessage(line)?.type !== "release") socket.destroy();
        else void release().then((reply) => endWithMessage(socket, reply));
      },
      () => socket.destroy(),
    );
    (async () => {
      try {
        sandbox = await pool(poolOptions).acquire(gone.signal);
      } catch (error) {
        if (!gone.signal.aborted) endWithMessage(socket, errorReply(error));
        return;
      }
      if (gone.signal.aborted) {
        await sandbox.release().catch(() => {});
        return;
      }
      token = randomBytes(16).toString("hex");
      unclaimed.set(token, sandbox);
      writeMessage(socket, {
        type: "acquired",
        containerId: sandbox.containerId,
        image: sandbox.image,
        token,
      });
    })();
  }

  function serveAgent(socket: Socket, token: unknown): void {
    const sandbox = typeof token === "string" ? unclaimed.get(token) : undefined;
    if (!sandbox) {
      endWithMessage(
        socket,
        errorReply(new SandboxError("INVALID_ARGUMENT", "no sandbox waits for this agent token")),
      );
      return;
    }
    unclaimed.delete(token as string);
    sandbox.agent.relay(socket);
  }

  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    const firstLine = setTimeout(() => socket.destroy(), FIRST_LINE_TIMEOUT_MS);
    readLine(socket).then(
      (line) => {
        clearTimeout(firstLine);
        const message = parseMessage(line);
        if (!message || !secretMatches(message.secret, secret)) socket.destroy();
        else if (
          message.type === "acquire" &&
          typeof message.options === "object" &&
          message.options !== null
        ) {
          serveLease(socket, message.options as PaiSandboxPoolOptions);
        } else if (message.type === "agent") serveAgent(socket, message.token);
        else socket.destroy();
      },
      () => {
        clearTimeout(firstLine);
        socket.destroy();
      },
    );
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => {
      server.off("error", reject);
      resolve();
    });
  });

  for (const poolOptions of options.warm ?? []) pool(poolOptions);

  return {
    address: { path, secret },
    ownerId: owner.id,
    swept,
    pool,
    async close() {
      if (closed) return;
      closed = true;
      closing.abort();
      clearInterval(sweeper);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      });
      await Promise.allSettled([...pools.values()].map((each) => each.close()));
      await swept;
      await owner.close();
    },
  };
}
