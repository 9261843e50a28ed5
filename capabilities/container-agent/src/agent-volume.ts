import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { type ContainerDriver, poolLabels } from "@pai/pool";
import tar from "tar-stream";
import { ContainerAgentError } from "./container-agent-error.ts";
import {
  findPrebuiltBinary,
  nodeArchitecture,
  PREBUILT_ARCHITECTURES,
  PREBUILT_FIX,
} from "./prebuilt-binary.ts";

/** Where containers mount the agent's volume (read-only). */
export const AGENT_DIRECTORY = "/opt/pai";
/** The agent's path inside a container. */
export const AGENT_PATH = `${AGENT_DIRECTORY}/pai-agent`;

/**
 * By architecture (Node's names): a tar archive holding that agent binary as `pai-agent` (root, 0755), built once
 * per process.
 */
const agentArchives = new Map<string, Promise<Buffer>>();

function loadAgentArchive(architecture: string): Promise<Buffer> {
  let archive = agentArchives.get(architecture);
  if (archive) return archive;
  archive = (async () => {
    const binary = await readFile(await findPrebuiltBinary({ program: "pai-agent", architecture }));
    const pack = tar.pack();
    // A fixed mtime keeps the archive (and so the volume's name and the pools' spec hashes) the same in every
    // process: a restarted runtime must recognise the containers it reattaches.
    pack.entry(
      { name: "pai-agent", mode: 0o755, uid: 0, gid: 0, size: binary.length, mtime: new Date(0) },
      binary,
    );
    pack.finalize();
    const chunks: Buffer[] = [];
    for await (const chunk of pack) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  })();
  agentArchives.set(architecture, archive);
  archive.catch(() => agentArchives.delete(architecture));
  return archive;
}

/** The agent volume's name, once per process. */
let volumeName: Promise<string> | undefined;

/**
 * `pai-agent-<hash>` over the archive of every architecture this package ships: one name for every engine, whatever
 * its architecture (each engine's volume holds its own architecture's binary), so a container spec — and the pools'
 * spec hashes — is the same on every engine and in every process.
 */
function loadVolumeName(): Promise<string> {
  volumeName ??= (async () => {
    const hash = createHash("sha256");
    const shipped: string[] = [];
    for (const architecture of PREBUILT_ARCHITECTURES) {
      const archive = await loadAgentArchive(architecture).catch((error: unknown) => {
        if (ContainerAgentError.hasCode(error, "PREBUILT_BINARY_MISSING")) return undefined;
        throw error;
      });
      if (!archive) continue;
      hash.update(`linux-${architecture} ${createHash("sha256").update(archive).digest("hex")}\n`);
      shipped.push(architecture);
    }
    if (shipped.length === 0) {
      throw new ContainerAgentError(
        "PREBUILT_BINARY_MISSING",
        `this @pai/container-agent ships no pai-agent for any architecture: ${PREBUILT_FIX}`,
        {
          details: {
            program: "pai-agent",
            platform: "linux",
            architecture: PREBUILT_ARCHITECTURES.join(","),
          },
        },
      );
    }
    return `pai-agent-${hash.digest("hex").slice(0, 12)}`;
  })();
  volumeName.catch(() => {
    volumeName = undefined;
  });
  return volumeName;
}

/** The read-only mount of an agent volume in a container (`ContainerSpec.sharedVolumes`). */
export interface AgentVolumeMount {
  /**
   * The volume's name, `pai-agent-<hash of the shipped builds>`: the same on every engine, whatever its
   * architecture, and in every process.
   */
  name: string;
  target: string;
}

/**
 * The mount of this agent build's volume, without touching an engine: what a container spec names before any
 * engine is prepared (fill the volume on each engine with {@link prepareAgentVolume}).
 */
export async function agentVolumeMount(): Promise<AgentVolumeMount> {
  return { name: await loadVolumeName(), target: AGENT_DIRECTORY };
}

/**
 * The named volume holding this agent build on `driver`'s engine, filled once per engine and mounted read-only
 * at {@link AGENT_DIRECTORY} by every container that runs the agent (sandboxes and browsers): nothing is copied
 * into each container. It holds the agent for the engine's architecture (`driver.info()`, which may differ from
 * this machine's: a remote aarch64 engine gets the aarch64 agent), as this package ships it prebuilt. It is filled
 * through the archive API (so remote engines work too): a container that is never started mounts it writable, the
 * binary goes in, and that container is removed; the volume stays. Its name carries the hash of every
 * architecture's build, so a new build gets a new volume, and the name is the same on every engine.
 *
 * @returns the mount for `ContainerSpec.sharedVolumes` (the same as {@link agentVolumeMount})
 * @throws ContainerAgentError `PREBUILT_BINARY_MISSING` when this package ships no agent for the engine's
 *   architecture (`details.engineArchitecture`)
 */
export async function prepareAgentVolume(options: {
  driver: ContainerDriver;
  /** Any local image: it only hosts the short-lived container that fills the volume. */
  image: string;
  signal?: AbortSignal;
}): Promise<AgentVolumeMount> {
  const { driver, image, signal } = options;
  const name = await loadVolumeName();
  const { architecture: machine } = await driver.info(signal ? { signal } : {});
  const archive = await loadAgentArchive(nodeArchitecture(machine)).catch((error: unknown) => {
    if (!ContainerAgentError.hasCode(error, "PREBUILT_BINARY_MISSING")) throw error;
    throw new ContainerAgentError(
      "PREBUILT_BINARY_MISSING",
      `the engine ${machine ? `runs on ${machine}` : "does not say its architecture"}: ${error.message}`,
      { cause: error, details: { ...error.details, engineArchitecture: machine } },
    );
  });
  const { id } = await driver.create(
    { image, writablePaths: [], sharedVolumes: [{ name, target: AGENT_DIRECTORY, readOnly: false }] },
    { [poolLabels.managed]: "true", "pai.purpose": "agent-volume" },
    signal ? { signal } : {},
  );
  try {
    const present = await driver
      .getArchive(id, AGENT_PATH, signal ? { signal } : {})
      .then((stream) => {
        stream.resume();
        return true;
      })
      .catch(() => false);
    if (!present) await driver.putArchive(id, AGENT_DIRECTORY, archive, signal ? { signal } : {});
  } finally {
    await driver.remove(id).catch(() => undefined);
  }
  return { name, target: AGENT_DIRECTORY };
}
