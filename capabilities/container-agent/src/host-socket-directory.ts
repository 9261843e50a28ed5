import { randomUUID } from "node:crypto";
import { lstat, mkdir, readdir, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ContainerDriver, PoolError, poolLabels } from "@pai/pool";

/**
 * Where containers mount the host socket directory (read-only): this machine's PAI processes keep their egress
 * sockets (`<pid>.sock`) and agent dial sockets (`<pid>.agent.sock`) there.
 */
export const EGRESS_SOCKET_DIRECTORY = "/run/pai-egress";

/**
 * The host socket directory: the same in every process of a user (it is part of the container spec, so of the
 * pools' spec hashes): `/run/pai-egress` for root, `<tmpdir>/pai-egress-<uid>` otherwise.
 */
export function egressSocketHostDirectory(): string {
  const uid = process.getuid?.() ?? 0;
  return uid === 0 ? "/run/pai-egress" : join(tmpdir(), `pai-egress-${uid}`);
}

/** The host socket directory when it is made (or found) safely: this user's and writable by no one else. */
export async function ownHostSocketDirectory(): Promise<string | undefined> {
  const directory = egressSocketHostDirectory();
  try {
    await mkdir(directory, { recursive: true, mode: 0o755 });
    const info = await lstat(directory);
    // Someone else's directory (or one others may write to) could hold a socket posing as ours.
    if (!info.isDirectory() || info.uid !== (process.getuid?.() ?? 0) || (info.mode & 0o022) !== 0) {
      return undefined;
    }
    return directory;
  } catch {
    return undefined;
  }
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
 * The path of this process's socket `<pid><suffix>` in `directory` (e.g. `.sock`, `.agent.sock`), after removing
 * the files with that suffix of processes that are gone, and this process's own from an earlier life.
 */
export async function claimSocketPath(directory: string, suffix: string): Promise<string> {
  for (const name of await readdir(directory)) {
    const pid = name.endsWith(suffix) ? name.slice(0, -suffix.length) : "";
    if (/^\d+$/.test(pid) && (Number(pid) === process.pid || isDeadPid(Number(pid)))) {
      await unlink(join(directory, name)).catch(() => undefined);
    }
  }
  return join(directory, `${process.pid}${suffix}`);
}

/** Why one probe attempt said no: the engine's answer (`remote`), or a failure that may pass (`transient`). */
type ProbeAttempt = boolean | { transient: unknown };

/** One attempt of {@link engineSeesDirectory}. */
async function probeOnce(driver: ContainerDriver, image: string, directory: string): Promise<ProbeAttempt> {
  const name = `.probe-${randomUUID()}`;
  await writeFile(join(directory, name), "", { mode: 0o644 });
  try {
    let id: string;
    try {
      ({ id } = await driver.create(
        {
          image,
          writablePaths: [],
          hostDirectories: [{ source: directory, target: EGRESS_SOCKET_DIRECTORY }],
        },
        { [poolLabels.managed]: "true", "pai.purpose": "egress-probe" },
      ));
    } catch (error) {
      if (PoolError.hasCode(error, "DOCKER_UNAVAILABLE")) throw error;
      // A remote engine has no such directory: the engine refuses the mount. Anything else may pass.
      return /mount|bind source|no such file or directory|not a directory/i.test(String(error))
        ? false
        : { transient: error };
    }
    try {
      const archive = await driver.getArchive(id, `${EGRESS_SOCKET_DIRECTORY}/${name}`);
      archive.resume();
      return true;
    } catch (error) {
      if (PoolError.hasCode(error, "DOCKER_UNAVAILABLE")) throw error;
      // Not this machine's directory: the file is not there.
      return PoolError.hasCode(error, "NOT_FOUND") ? false : { transient: error };
    } finally {
      await driver.remove(id).catch(() => undefined);
    }
  } finally {
    await unlink(join(directory, name)).catch(() => undefined);
  }
}

/** Attempts of a probe whose failures may pass (a loaded engine timing out), before it says no. */
const PROBE_ATTEMPTS = 3;

/**
 * Whether a container of `driver`'s engine that mounts `directory` sees a file this process just wrote there. A
 * failure that is not the engine's answer is tried again (the answer decides the containers' spec, so the pool id
 * processes with identical bindings share: a loaded engine's hiccup must not give one process another pool).
 */
async function engineSeesDirectory(
  driver: ContainerDriver,
  image: string,
  directory: string,
): Promise<boolean> {
  let last: unknown;
  for (let attempt = 1; attempt <= PROBE_ATTEMPTS; attempt++) {
    const answer = await probeOnce(driver, image, directory);
    if (typeof answer === "boolean") return answer;
    last = answer.transient;
    if (attempt < PROBE_ATTEMPTS) await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
  }
  process.emitWarning(
    `@pai/container-agent: could not tell whether the engine shares ${directory} (${String(last)}); ` +
      "its containers go without the host socket directory",
  );
  return false;
}

const probesByDriver = new WeakMap<ContainerDriver, Promise<boolean>>();
const probesByEngine = new Map<string, Promise<boolean>>();

/**
 * Whether containers of `driver`'s engine can mount the host socket directory: the engine shares this machine's
 * filesystem (not a remote `DOCKER_HOST`, not a VM). Decided once per driver by a probe — a container that is
 * created (never started) with the directory mounted must see a file this process wrote there — so a spec never
 * names a directory the engine lacks. Rejects (and asks again next time) when the engine is down.
 */
export function engineSharesHostSocketDirectory(options: {
  driver: ContainerDriver;
  /** Any local image: it only hosts the probe container. */
  image: string;
  directory: string;
  /**
   * The engine's address when it says which engine the driver reaches (e.g. `dockerEngineId()` of `DOCKER_HOST`):
   * drivers of the same engine then share one probe. By default each driver is probed once.
   */
  engineKey?: string | undefined;
}): Promise<boolean> {
  const { driver, image, directory, engineKey } = options;
  let probe = engineKey === undefined ? probesByDriver.get(driver) : probesByEngine.get(engineKey);
  if (!probe) {
    const made = engineSeesDirectory(driver, image, directory);
    if (engineKey === undefined) probesByDriver.set(driver, made);
    else probesByEngine.set(engineKey, made);
    made.catch(() => {
      if (engineKey === undefined) probesByDriver.delete(driver);
      else probesByEngine.delete(engineKey);
    });
    probe = made;
  }
  return probe;
}
