import { createHash, randomUUID } from "node:crypto";
import { chmod, mkdir, open, readFile, stat, unlink, utimes } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/** Who holds a {@link FileLock}, as its lock file says. */
export interface FileLockOwner {
  pid: number;
  host: string;
  /** The name the lock was taken for. */
  name: string;
  /** When it was taken (ms since the epoch). */
  since: number;
}

/** A held lock: release it in `finally`. */
export interface FileLock extends AsyncDisposable {
  release(): Promise<void>;
}

/** Options of {@link acquireFileLock}. */
export interface AcquireFileLockOptions {
  /** What the lock guards, e.g. `image <engine id> pai/sandbox:1a2b3c4d5e6f`: one lock file per name. */
  name: string;
  /** Told once when another process holds the lock and this one starts waiting for it. */
  onWait?: (owner: FileLockOwner | undefined) => void;
  signal?: AbortSignal;
  /** Where the lock files live. @default `<os temp dir>/pai-locks` */
  directory?: string;
}

/** A holder refreshes its lock file's time this often... */
const HEARTBEAT_MS = 2_000;
/** ...so a lock file untouched for this long belongs to a process that is gone (or frozen, or on another host). */
const STALE_MS = 30_000;
const POLL_MS = 200;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, owned by another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function ownerOf(path: string): Promise<FileLockOwner | undefined> {
  try {
    return JSON.parse(await readFile(path, "utf8")) as FileLockOwner;
  } catch {
    // Gone, or being written this very moment.
    return undefined;
  }
}

/** Whether the lock at `path` is held by nobody any more: its owner died on this host, or it stopped refreshing. */
async function isStale(path: string, owner: FileLockOwner | undefined): Promise<boolean> {
  if (owner && owner.host === hostname() && !alive(owner.pid)) return true;
  try {
    return Date.now() - (await stat(path)).mtimeMs > STALE_MS;
  } catch {
    return false;
  }
}

/** Creates `path` holding `content` unless it exists. */
async function create(path: string, content: string): Promise<boolean> {
  try {
    const file = await open(path, "wx", 0o644);
    try {
      await file.writeFile(content);
    } finally {
      await file.close();
    }
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
}

/**
 * Removes the stale lock at `path`, once: only the holder of the `.break` file beside it may, after reading the
 * lock again, so two waiters that both saw the dead owner cannot remove a lock a third one has taken since.
 */
async function breakStale(path: string): Promise<void> {
  const breaker = `${path}.break`;
  if (!(await create(breaker, String(process.pid)))) {
    // A breaker that died while breaking leaves its file: it is old soon.
    const age = await stat(breaker).then(
      (info) => Date.now() - info.mtimeMs,
      () => 0,
    );
    if (age > STALE_MS) await unlink(breaker).catch(() => undefined);
    return;
  }
  try {
    if (await isStale(path, await ownerOf(path))) await unlink(path).catch(() => undefined);
  } finally {
    await unlink(breaker).catch(() => undefined);
  }
}

/**
 * Takes an exclusive lock shared by every process of this machine: a file created with `O_EXCL` in the OS temp
 * directory, named after a hash of `options.name`, holding its owner (pid, host). It waits while another process
 * holds it, and takes it over when the holder is gone: dead (its pid no longer runs here) or silent (a holder
 * refreshes the file's time every 2 s; 30 s without is stale). Re-check what the lock guards once it is yours:
 * the previous holder may have done the work.
 *
 * @example
 * const lock = await acquireFileLock({ name: `image ${engineId} ${tag}`, signal });
 * try { ... } finally { await lock.release(); }
 */
export async function acquireFileLock(options: AcquireFileLockOptions): Promise<FileLock> {
  const { signal } = options;
  const directory = options.directory ?? join(tmpdir(), "pai-locks");
  await mkdir(directory, { recursive: true });
  // Shared by every user of the machine, like the temp directory itself.
  await chmod(directory, 0o1777).catch(() => undefined);
  const digest = createHash("sha256").update(options.name).digest("hex").slice(0, 32);
  const path = join(directory, `${digest}.lock`);
  const token = randomUUID();
  const owner: FileLockOwner & { token: string } = {
    pid: process.pid,
    host: hostname(),
    name: options.name,
    since: Date.now(),
    token,
  };
  let waiting = false;
  for (;;) {
    signal?.throwIfAborted();
    if (await create(path, JSON.stringify(owner))) break;
    const holder = await ownerOf(path);
    if (await isStale(path, holder)) {
      await breakStale(path);
      continue;
    }
    if (!waiting) {
      waiting = true;
      options.onWait?.(holder);
    }
    // An abort rejects with the signal's own reason, as every PAI call does.
    await sleep(POLL_MS, undefined, signal ? { signal } : {}).catch((error: unknown) => {
      throw signal?.aborted ? signal.reason : error;
    });
  }
  const heartbeat = setInterval(() => {
    const now = new Date();
    utimes(path, now, now).catch(() => undefined);
  }, HEARTBEAT_MS);
  heartbeat.unref();
  let released: Promise<void> | undefined;
  const release = () => {
    released ??= (async () => {
      clearInterval(heartbeat);
      // Only our own: a lock taken over as stale (we froze for 30 s) is the new holder's.
      const current = (await ownerOf(path)) as (FileLockOwner & { token?: string }) | undefined;
      if (current?.token === token) await unlink(path).catch(() => undefined);
    })();
    return released;
  };
  return { release, [Symbol.asyncDispose]: release };
}
