import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";

/** The prefix of every test runner's owner id; other owners (runtime processes) are never judged here. */
export const RUNNER_OWNER_PREFIX = "vitest";

/** A test run's identity on the engine: `vitest:<host>:<pid>:<process start ticks>:<8 random hex>`. */
export interface RunnerOwnerId {
  host: string;
  pid: number;
  /** The process's start time in clock ticks since boot (`/proc/<pid>/stat`); `0` where there is no `/proc`. */
  startTicks: number;
  id: string;
}

/** What {@link isRunnerOwnerLive} knows about the machine it runs on. */
export interface RunnerLivenessProbe {
  /** This machine's host name. */
  host: string;
  /** The start ticks of a running process, `undefined` when no such process runs, `0` when unknowable. */
  processStartTicks(pid: number): number | undefined;
  /** When the owner last wrote its heartbeat record into the state directory, if a record is there. */
  heartbeatAt(ownerId: string): number | undefined;
  now: number;
  /** A heartbeat older than this is dead. */
  ttlMs: number;
}

/** A running test run's owner record: its id, and a heartbeat file while it lives. */
export interface RunnerOwner {
  readonly id: string;
  /** A private directory of the run (its socket lives there), removed with the record. */
  readonly directory: string;
  /** Stops the heartbeat and removes the record and the directory (a clean end). */
  close(): Promise<void>;
}

/** Options of {@link createRunnerOwner}. */
export interface RunnerOwnerOptions {
  /**
   * Where heartbeat records live. Put it on a filesystem shared by the hosts that share an engine to let
   * one host free what a dead run on another left.
   * @default `$PAI_SANDBOX_STATE_DIR`, else `<tmpdir>/pai-sandbox-vitest-<uid>`
   */
  stateDirectory?: string;
  /** @default 5000 */
  heartbeatIntervalMs?: number;
}

/** Heartbeats older than this belong to a dead run. */
export const RUNNER_HEARTBEAT_TTL_MS = 30_000;

/** Where runs keep their heartbeat records: `$PAI_SANDBOX_STATE_DIR`, else `<tmpdir>/pai-sandbox-vitest-<uid>`. */
export function defaultStateDirectory(): string {
  return (
    process.env.PAI_SANDBOX_STATE_DIR ?? join(tmpdir(), `pai-sandbox-vitest-${process.getuid?.() ?? "user"}`)
  );
}

function recordPath(stateDirectory: string, ownerId: string): string {
  return join(stateDirectory, "owners", `${encodeURIComponent(ownerId)}.json`);
}

/** The run's own directory: named by a hash, so a socket in it stays within the 108 bytes of a unix path. */
export function runDirectory(stateDirectory: string, ownerId: string): string {
  return join(stateDirectory, "runs", createHash("sha256").update(ownerId).digest("hex").slice(0, 16));
}

/** Parses a runner owner id; `undefined` for anything else (a runtime process's owner, garbage). */
export function parseRunnerOwnerId(id: string): RunnerOwnerId | undefined {
  const parts = id.split(":");
  if (parts.length !== 5 || parts[0] !== RUNNER_OWNER_PREFIX) return undefined;
  const [, host, pid, startTicks, random] = parts as [string, string, string, string, string];
  if (host === "" || !/^\d+$/.test(pid) || !/^\d+$/.test(startTicks) || !/^[0-9a-f]{8}$/.test(random)) {
    return undefined;
  }
  return { host, pid: Number(pid), startTicks: Number(startTicks), id };
}

/**
 * Whether a run is alive. On its own host: its process runs and started when the id says (a reused pid is a
 * different process). On another host: unless a heartbeat record of it is here and stale, it is taken as
 * alive — a run is never judged dead on missing evidence.
 */
export function isRunnerOwnerLive(owner: RunnerOwnerId, probe: RunnerLivenessProbe): boolean {
  if (owner.host === probe.host) {
    const startTicks = probe.processStartTicks(owner.pid);
    if (startTicks === undefined) return false;
    return startTicks === 0 || owner.startTicks === 0 || startTicks === owner.startTicks;
  }
  const heartbeatAt = probe.heartbeatAt(owner.id);
  return heartbeatAt === undefined || probe.now - heartbeatAt <= probe.ttlMs;
}

/** Start ticks of `pid` from `/proc`; `undefined` when it does not run, `0` where `/proc` does not exist. */
export function processStartTicks(pid: number): number | undefined {
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return undefined;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces and parentheses); starttime is field 22.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[19]);
    return Number.isSafeInteger(ticks) ? ticks : 0;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT" && process.platform === "linux" ? undefined : 0;
  }
}

/** A probe of this machine, reading heartbeat records from `stateDirectory`. */
export async function machineLivenessProbe(stateDirectory: string): Promise<RunnerLivenessProbe> {
  const heartbeats = await readHeartbeats(stateDirectory);
  return {
    host: hostname(),
    processStartTicks,
    heartbeatAt: (ownerId) => heartbeats.get(ownerId),
    now: Date.now(),
    ttlMs: RUNNER_HEARTBEAT_TTL_MS,
  };
}

/** Every readable heartbeat record of the state directory: owner id → last heartbeat (ms since the epoch). */
async function readHeartbeats(stateDirectory: string): Promise<Map<string, number>> {
  const heartbeats = new Map<string, number>();
  const directory = join(stateDirectory, "owners");
  const names = await readdir(directory).catch(() => [] as string[]);
  await Promise.all(
    names
      .filter((name) => name.endsWith(".json"))
      .map(async (name) => {
        try {
          const record = JSON.parse(await readFile(join(directory, name), "utf8")) as {
            id?: unknown;
            heartbeatAt?: unknown;
          };
          if (typeof record.id === "string" && typeof record.heartbeatAt === "number") {
            heartbeats.set(record.id, record.heartbeatAt);
          }
        } catch {
          // A record being replaced or half-written by a dying run: no evidence either way.
        }
      }),
  );
  return heartbeats;
}

/** Removes the records and directories of runs that are no longer alive (a run killed with -9 leaves both). */
export async function pruneRunnerRecords(stateDirectory: string, probe: RunnerLivenessProbe): Promise<void> {
  const directory = join(stateDirectory, "owners");
  const names = await readdir(directory).catch(() => [] as string[]);
  await Promise.all(
    names
      .filter((name) => name.endsWith(".json"))
      .map(async (name) => {
        const owner = parseRunnerOwnerId(decodeURIComponent(name.slice(0, -".json".length)));
        if (owner && !isRunnerOwnerLive(owner, probe)) {
          await rm(runDirectory(stateDirectory, owner.id), { recursive: true, force: true });
          await rm(join(directory, name), { force: true });
        }
      }),
  );
}

/**
 * This process's owner identity as a test runner, with a heartbeat record in the state directory that is
 * rewritten every `heartbeatIntervalMs`, and a private directory; `close()` removes both.
 */
export async function createRunnerOwner(options: RunnerOwnerOptions = {}): Promise<RunnerOwner> {
  const stateDirectory = options.stateDirectory ?? defaultStateDirectory();
  const startTicks = processStartTicks(process.pid) ?? 0;
  const id = [RUNNER_OWNER_PREFIX, hostname(), process.pid, startTicks, randomBytes(4).toString("hex")].join(
    ":",
  );
  const path = recordPath(stateDirectory, id);
  const directory = runDirectory(stateDirectory, id);
  await mkdir(join(stateDirectory, "owners"), { recursive: true, mode: 0o700 });
  await mkdir(directory, { recursive: true, mode: 0o700 });
  const startedAt = Date.now();
  let writing: Promise<void> = Promise.resolve();
  const beat = () => {
    writing = writing
      .catch(() => {})
      .then(async () => {
        const record = { id, host: hostname(), pid: process.pid, startedAt, heartbeatAt: Date.now() };
        const temporary = `${path}.${process.pid}.tmp`;
        await writeFile(temporary, `${JSON.stringify(record)}\n`, { mode: 0o600 });
        await rename(temporary, path);
      });
    return writing;
  };
  await beat();
  const timer = setInterval(() => {
    beat().catch(() => {});
  }, options.heartbeatIntervalMs ?? 5000);
  timer.unref();
  return {
    id,
    directory,
    async close() {
      clearInterval(timer);
      await writing.catch(() => {});
      await rm(directory, { recursive: true, force: true });
      await rm(path, { force: true });
    },
  };
}
