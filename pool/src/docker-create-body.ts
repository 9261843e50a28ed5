import type Docker from "dockerode";
import { type ContainerSpec, type ResolvedContainerSpec, resolveContainerSpec } from "./container-spec.ts";

/** What the driver decided for one container, beyond its spec. */
export interface EnginePlacement {
  /** The volume driver of the container's disk (see `DockerDriverOptions.diskVolumeDriver`). */
  diskVolumeDriver: string;
  /** The disk all writable paths of the container share; unique per container. */
  diskId: string;
  /** The OCI runtime when the spec names none; `undefined`: the engine's default. */
  runtime?: string | undefined;
  /**
   * For network `none`: the engine host's path of a hosts file to mount on `/etc/hosts`, and the engine's
   * network setup skipped (see `DockerDriverOptions.skipNoneNetworkSetup`). `undefined`: the engine sets it up.
   */
  hostsFile?: string | undefined;
}

/** `KEY=value` lines of an Engine API body's `Env`. */
export function envList(env: Readonly<Record<string, string>> | undefined): string[] | undefined {
  return env ? Object.entries(env).map(([key, value]) => `${key}=${value}`) : undefined;
}

/** The mount of writable path number `index`: an anonymous volume, on the container's disk when it has one. */
function writableMount(target: string, index: number, diskBytes: number | null, placement: EnginePlacement) {
  if (diskBytes === null) return { Type: "volume", Target: target };
  return {
    Type: "volume",
    Target: target,
    VolumeOptions: {
      DriverConfig: {
        Name: placement.diskVolumeDriver,
        Options: {
          size: String(diskBytes),
          disk: placement.diskId,
          dir: `${index}${target.replaceAll("/", "-")}`,
        },
      },
    },
  };
}

/** The Engine API body of `POST /containers/create` for a spec (its tests check the mapping). @internal */
export function toCreateBody(
  spec: ContainerSpec | ResolvedContainerSpec,
  labels: Readonly<Record<string, string>>,
  placement: EnginePlacement,
): Docker.ContainerCreateOptions {
  const resolved = resolveContainerSpec(spec);
  const { limits } = resolved;
  const runtime = resolved.runtime ?? placement.runtime;
  const skipNetworkSetup = resolved.network === "none" && placement.hostsFile !== undefined;
  return {
    Image: resolved.image,
    Cmd: [...resolved.cmd],
    ...(resolved.entrypoint ? { Entrypoint: [...resolved.entrypoint] } : {}),
    User: resolved.user,
    Env: envList(resolved.env) ?? [],
    WorkingDir: resolved.workingDir,
    Labels: { ...resolved.labels, ...labels },
    ...(skipNetworkSetup ? { NetworkDisabled: true } : {}),
    Tty: false,
    OpenStdin: false,
    AttachStdin: false,
    AttachStdout: false,
    AttachStderr: false,
    HostConfig: {
      NetworkMode: resolved.network,
      ReadonlyRootfs: resolved.readOnlyRootfs,
      // Anonymous volumes (no Source): created with the container, removed by `remove({ v: true })`.
      Mounts: [
        ...resolved.writablePaths.map((target, index) =>
          writableMount(target, index, limits.diskBytes, placement),
        ),
        ...resolved.sharedVolumes.map((volume) => ({
          Type: "volume",
          Source: volume.name,
          Target: volume.target,
          ReadOnly: volume.readOnly,
        })),
        ...(resolved.hostDirectories ?? []).map((directory) => ({
          Type: "bind",
          Source: directory.source,
          Target: directory.target,
          ReadOnly: true,
        })),
        ...(skipNetworkSetup
          ? [{ Type: "bind", Source: placement.hostsFile, Target: "/etc/hosts", ReadOnly: true }]
          : []),
      ] as unknown as Docker.MountConfig,
      CapDrop: ["ALL"],
      ...(resolved.capabilities ? { CapAdd: [...resolved.capabilities] } : {}),
      SecurityOpt: ["no-new-privileges"],
      LogConfig: { Type: "none", Config: {} },
      Init: true,
      Memory: limits.memoryBytes,
      MemorySwap: limits.memoryBytes,
      NanoCpus: limits.nanoCpus,
      PidsLimit: limits.pidsLimit,
      Ulimits: [{ Name: "fsize", Soft: limits.fsizeBytes, Hard: limits.fsizeBytes }],
      ...(resolved.shmSizeBytes !== null ? { ShmSize: resolved.shmSizeBytes } : {}),
      RestartPolicy: { Name: "no" },
      AutoRemove: false,
      ...(runtime !== undefined ? { Runtime: runtime } : {}),
    },
  };
}
