import { randomUUID } from "node:crypto";
import { lstat, mkdir, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PaiError } from "@pai/core";
import { type ContainerDriver, PoolError, poolLabels } from "@pai/pool";
import { createEgressRelay, type EgressRelay } from "./egress-relay.ts";
import type { EgressNetworkOptions } from "./serve-egress.ts";

/** Where containers mount the host's egress socket directory (read-only). */
export const EGRESS_SOCKET_DIRECTORY = "/run/pai-egress";

/**
 * The fast channel of a container's egress: the unix socket of this process's egress relay in a host directory
 * every egress container of the engine mounts read-only, to which the agent relays each proxy connection (see
 * `serveEgress`). Only for an engine that shares this machine's filesystem.
 */
export interface EgressChannel {
  /** The read-only mount for `ContainerSpec.hostDirectories`. */
  readonly mount: { source: string; target: string };
  /** This process's relay, listening there. */
  readonly relay: EgressRelay;
  /** The socket's path inside a container. */
  readonly containerPath: string;
}

/**
 * Whether a binding's `network` asks for the fast channel where there is one (`channel` is `"auto"` or unset).
 * @throws PaiError `INVALID_ARGUMENT` for another `channel`
 */
export function wantsEgressChannel(network: EgressNetworkOptions): boolean {
  const channel = network.channel ?? "auto";
  if (channel !== "auto" && channel !== "tunnel") {
    throw new PaiError(
      "INVALID_ARGUMENT",
      `network.channel is "auto" or "tunnel", got ${JSON.stringify(channel)}`,
    );
  }
  return channel === "auto";
}

/**
 * The host directory of the egress sockets: the same in every process of a user (it is part of the container
 * spec, so of the pools' spec hashes): `/run/pai-egress` for root, `<tmpdir>/pai-egress-<uid>` otherwise.
 */
export function egressSocketHostDirectory(): string {
  const uid = process.getuid?.() ?? 0;
  return uid === 0 ? "/run/pai-egress" : join(tmpdir(), `pai-egress-${uid}`);
}

let shared: Promise<EgressRelay | undefined> | undefined;

/**
 * This process's egress relay, started once; `undefined` when the directory cannot be made safely or the relay
 * cannot be built or started (containers then tunnel).
 */
function sharedEgressRelay(directory: string): Promise<EgressRelay | undefined> {
  shared ??= (async () => {
    try {
      await mkdir(directory, { recursive: true, mode: 0o755 });
      const info = await lstat(directory);
      // Someone else's directory (or one others may write to) could hold a socket posing as ours.
      if (!info.isDirectory() || info.uid !== (process.getuid?.() ?? 0) || (info.mode & 0o022) !== 0) {
        return undefined;
      }
      return await createEgressRelay({ directory });
    } catch {
      return undefined;
    }
  })();
  return shared;
}

const probes = new WeakMap<ContainerDriver, Promise<EgressChannel | undefined>>();

/** Whether a container of `driver`'s engine that mounts `directory` sees a file this process just wrote there. */
async function engineSeesDirectory(
  driver: ContainerDriver,
  image: string,
  directory: string,
): Promise<boolean> {
  const name = `.probe-${randomUUID()}`;
  await writeFile(join(directory, name), "", { mode: 0o644 });
  try {
    const { id } = await driver.create(
      {
        image,
        writablePaths: [],
        hostDirectories: [{ source: directory, target: EGRESS_SOCKET_DIRECTORY }],
      },
      { [poolLabels.managed]: "true", "pai.purpose": "egress-probe" },
    );
    try {
      const archive = await driver.getArchive(id, `${EGRESS_SOCKET_DIRECTORY}/${name}`);
      archive.resume();
      return true;
    } finally {
      await driver.remove(id).catch(() => undefined);
    }
  } catch (error) {
    if (PoolError.hasCode(error, "DOCKER_UNAVAILABLE")) throw error;
    // A remote engine: no such directory there (the create fails) or not this one (the file is missing).
    return false;
  } finally {
    await unlink(join(directory, name)).catch(() => undefined);
  }
}

/**
 * The fast egress channel for containers of `driver`'s engine, or `undefined` when that engine does not share
 * this machine's filesystem (a remote `DOCKER_HOST`, a VM) or this process's egress relay cannot run: then
 * connections travel in frames over the agent's exec stream. Decided once per driver by a probe — a container that is created (never started) with the
 * directory mounted must see a file this process wrote there — so a spec never names a directory the engine
 * lacks.
 */
export function prepareEgressChannel(options: {
  driver: ContainerDriver;
  /** Any local image: it only hosts the probe container. */
  image: string;
}): Promise<EgressChannel | undefined> {
  const { driver, image } = options;
  let probe = probes.get(driver);
  if (!probe) {
    probe = (async () => {
      const directory = egressSocketHostDirectory();
      const relay = await sharedEgressRelay(directory);
      if (!relay || !(await engineSeesDirectory(driver, image, directory))) return undefined;
      return {
        mount: { source: directory, target: EGRESS_SOCKET_DIRECTORY },
        relay,
        containerPath: `${EGRESS_SOCKET_DIRECTORY}/${relay.fileName}`,
      };
    })();
    probes.set(driver, probe);
    probe.catch(() => probes.delete(driver)); // the engine was down: ask again next time
  }
  return probe;
}
