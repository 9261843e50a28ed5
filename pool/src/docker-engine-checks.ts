import { randomBytes } from "node:crypto";
import type Docker from "dockerode";
import type { ContainerDriver, EngineInfo } from "./container-driver.ts";
import { type ContainerSpec, type ResolvedContainerSpec, resolveContainerSpec } from "./container-spec.ts";
import { diskDriverMissing } from "./disk-driver-missing.ts";
import { abortOption, dockerCall, dockerMessage, isAbortError, toPoolError } from "./docker-call.ts";
import { PoolError } from "./pool-error.ts";

/** The engine calls of a {@link ContainerDriver}: what {@link createDockerEngineChecks} makes. */
export type DockerEngineChecks = Pick<ContainerDriver, "ping" | "info" | "checkEngine">;

/** What {@link createDockerEngineChecks} looks for on the engine. */
export interface DockerEngineChecksOptions {
  /** See `DockerDriverOptions.diskVolumeDriver`. */
  diskVolumeDriver: string;
  /** The OCI runtime of a container whose spec names none (see `createRuntimePreference`). */
  runtimeFor(spec: ContainerSpec | ResolvedContainerSpec): Promise<string | undefined>;
}

/** The fields of the engine's `GET /info` that PAI reads. */
export interface DockerInfo {
  ID?: string;
  MemTotal?: number;
  NCPU?: number;
  ContainersRunning?: number;
  Name?: string;
  ServerVersion?: string;
  Architecture?: string;
  Runtimes?: Record<string, unknown>;
  DefaultRuntime?: string;
  Plugins?: { Volume?: string[] | null };
}

/** The engine's `GET /info`, bound to `signal`. */
export async function dockerInfo(docker: Docker, signal: AbortSignal | undefined): Promise<DockerInfo> {
  // dockerode's typings omit the options argument its `info` takes.
  return (await (docker.info as unknown as (options: object) => Promise<unknown>).call(
    docker,
    abortOption(signal),
  )) as DockerInfo;
}

/** What the engine says about itself, from `GET /info`. */
async function engineInfo(docker: Docker, signal?: AbortSignal): Promise<EngineInfo> {
  const info = await dockerInfo(docker, signal);
  return {
    memoryBytes: info.MemTotal ?? 0,
    cpus: info.NCPU ?? 0,
    containersRunning: info.ContainersRunning ?? 0,
    architecture: info.Architecture ?? "",
    hostname: info.Name ?? "",
    serverVersion: info.ServerVersion ?? "",
    runtimes: Object.keys(info.Runtimes ?? {}),
    defaultRuntime: info.DefaultRuntime ?? "runc",
    volumePlugins: info.Plugins?.Volume ?? [],
  };
}

/**
 * Fails with `NOT_FOUND` (saying nothing is pulled) when the engine lacks `image`.
 * @throws PoolError what inspecting the image throws otherwise
 */
async function requireImage(docker: Docker, image: string, signal: AbortSignal | undefined): Promise<void> {
  try {
    const found = docker.getImage(image);
    // dockerode's typings omit the abort signal its `inspect` takes.
    await (found.inspect as unknown as (options: object) => Promise<unknown>).call(
      found,
      abortOption(signal),
    );
  } catch (error) {
    const mapped = toPoolError(error, "inspect the image", { image });
    if (!PoolError.hasCode(mapped, "NOT_FOUND")) throw mapped;
    throw new PoolError(
      "NOT_FOUND",
      `Image ${image} is not on the engine (nothing is pulled: load it there first)`,
      {
        cause: mapped,
        details: { image },
      },
    );
  }
}

/**
 * The engine's facts once it lists `diskVolumeDriver` among its volume plugins.
 * @throws PoolError `CONTAINER_FAILED` (`details.reason: "disk-driver-missing"`) when it has no such plugin
 */
async function requireDiskPlugin(
  docker: Docker,
  diskVolumeDriver: string,
  signal: AbortSignal | undefined,
): Promise<EngineInfo> {
  let facts = await engineInfo(docker, signal);
  if (facts.volumePlugins.includes(diskVolumeDriver)) return facts;
  // The engine loads a plugin of the plugins folder on first use: asking every driver about a volume that does not
  // exist makes it look (a 404 is the expected answer), then it lists the plugin.
  await docker
    .getVolume(`pai-probe-${randomBytes(8).toString("hex")}`)
    .inspect(abortOption(signal))
    .catch((error: unknown) => {
      const mapped = toPoolError(error, "look for the disk plugin");
      if (!PoolError.hasCode(mapped, "NOT_FOUND")) throw mapped;
    });
  facts = await engineInfo(docker, signal);
  if (!facts.volumePlugins.includes(diskVolumeDriver)) throw diskDriverMissing(diskVolumeDriver);
  return facts;
}

/** What the Docker engine says about itself: whether it answers, its `docker info`, what it offers a spec. */
export function createDockerEngineChecks(
  docker: Docker,
  options: DockerEngineChecksOptions,
): DockerEngineChecks {
  return {
    ping(callOptions = {}) {
      return dockerCall(
        "ping",
        {},
        async () => {
          try {
            const ping = docker.ping as unknown as (options: Record<string, unknown>) => Promise<unknown>;
            await ping.call(docker, abortOption(callOptions.signal));
          } catch (error) {
            if (isAbortError(error)) throw error;
            const mapped = toPoolError(error, "ping");
            if (PoolError.hasCode(mapped, "DOCKER_UNAVAILABLE")) throw mapped;
            throw new PoolError(
              "DOCKER_UNAVAILABLE",
              `Docker engine did not answer a ping: ${dockerMessage(error)}`,
              {
                cause: error,
              },
            );
          }
        },
        callOptions.signal,
      );
    },

    checkEngine(spec, callOptions = {}) {
      const { signal } = callOptions;
      const resolved = resolveContainerSpec(spec);
      return dockerCall(
        "check the engine",
        { image: resolved.image },
        async () => {
          await requireImage(docker, resolved.image, signal);
          const facts =
            resolved.limits.diskBytes !== null
              ? await requireDiskPlugin(docker, options.diskVolumeDriver, signal)
              : await engineInfo(docker, signal);
          const preferred = resolved.runtime === null ? await options.runtimeFor(resolved) : resolved.runtime;
          return { runtime: preferred ?? facts.defaultRuntime };
        },
        signal,
      );
    },

    info(callOptions = {}) {
      return dockerCall("engine info", {}, () => engineInfo(docker, callOptions.signal), callOptions.signal);
    },
  };
}
