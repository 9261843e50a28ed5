import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { type ContainerDriver, poolLabels } from "@pai/pool";
import tar from "tar-stream";
import { agentBinaryPath, buildAgentBinary } from "./agent-binary.ts";

/** Where containers mount the agent's volume (read-only). */
export const AGENT_DIRECTORY = "/opt/pai";
/** The agent's path inside a container. */
export const AGENT_PATH = `${AGENT_DIRECTORY}/pai-agent`;

/** A tar archive holding the agent binary as `pai-agent` (root, 0755), built once per process. */
let agentArchive: Promise<Buffer> | undefined;

function loadAgentArchive(): Promise<Buffer> {
  agentArchive ??= (async () => {
    const binary = await readFile(agentBinaryPath).catch(async () => readFile(await buildAgentBinary()));
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
  agentArchive.catch(() => {
    agentArchive = undefined;
  });
  return agentArchive;
}

/** The read-only mount of an agent volume in a container (`ContainerSpec.sharedVolumes`). */
export interface AgentVolumeMount {
  /** The volume's name, `pai-agent-<hash of the build>`: the same on every engine and in every process. */
  name: string;
  target: string;
}

function mountOf(archive: Buffer): AgentVolumeMount {
  return {
    name: `pai-agent-${createHash("sha256").update(archive).digest("hex").slice(0, 12)}`,
    target: AGENT_DIRECTORY,
  };
}

/**
 * The mount of this agent build's volume, without touching an engine: what a container spec names before any
 * engine is prepared (fill the volume on each engine with {@link prepareAgentVolume}).
 */
export async function agentVolumeMount(): Promise<AgentVolumeMount> {
  return mountOf(await loadAgentArchive());
}

/**
 * The named volume holding this agent build on `driver`'s engine, filled once per engine and mounted read-only
 * at {@link AGENT_DIRECTORY} by every container that runs the agent (sandboxes and browsers): nothing is copied
 * into each container. It is filled through the archive API (so remote engines work too): a container that is
 * never started mounts it writable, the binary goes in, and that container is removed; the volume stays. Its
 * name carries the binary's hash, so a new build gets a new volume.
 *
 * @returns the mount for `ContainerSpec.sharedVolumes` (the same as {@link agentVolumeMount})
 */
export async function prepareAgentVolume(options: {
  driver: ContainerDriver;
  /** Any local image: it only hosts the short-lived container that fills the volume. */
  image: string;
  signal?: AbortSignal;
}): Promise<AgentVolumeMount> {
  const { driver, image, signal } = options;
  const archive = await loadAgentArchive();
  const mount = mountOf(archive);
  const { name } = mount;
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
  return mount;
}
