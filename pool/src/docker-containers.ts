import { randomBytes } from "node:crypto";
import type Docker from "dockerode";
import type {
  ContainerDriver,
  ContainerInspection,
  ContainerSummary,
  DiskUsage,
  LabelFilter,
} from "./container-driver.ts";
import type { ContainerSpec, ResolvedContainerSpec } from "./container-spec.ts";
import { missingDiskDriver } from "./disk-driver-missing.ts";
import { abortOption, dockerCall, dockerMessage, toPoolError } from "./docker-call.ts";
import { toCreateBody } from "./docker-create-body.ts";

/** The container calls of a {@link ContainerDriver}: what {@link createDockerContainers} makes. */
export type DockerContainers = Pick<
  ContainerDriver,
  "create" | "start" | "stop" | "remove" | "inspect" | "diskUsage" | "list"
>;

/** What {@link createDockerContainers} decides with, beyond each container's spec. */
export interface DockerContainersOptions {
  /** See `DockerDriverOptions.diskVolumeDriver`. */
  diskVolumeDriver: string;
  /** The OCI runtime of a container whose spec names none (see `createRuntimePreference`). */
  runtimeFor(spec: ContainerSpec | ResolvedContainerSpec): Promise<string | undefined>;
  /** The hosts file of a container whose network the engine does not set up (see `createHostsFileSource`). */
  hostsFileFor(
    spec: ContainerSpec | ResolvedContainerSpec,
    signal?: AbortSignal,
  ): Promise<string | undefined>;
}

/** The Engine API's label filter for `filter`. */
export function labelFilters(filter: LabelFilter): string[] {
  return Object.entries(filter.labels).map(([key, value]) => `${key}=${value}`);
}

/** A container's life on the Docker engine: create, start, stop, remove, inspect, its disk, and the list. */
export function createDockerContainers(docker: Docker, options: DockerContainersOptions): DockerContainers {
  const { diskVolumeDriver } = options;
  return {
    async create(spec, labels, callOptions = {}) {
      const [runtime, hosts] = await dockerCall(
        "prepare the engine",
        { image: spec.image },
        () => Promise.all([options.runtimeFor(spec), options.hostsFileFor(spec, callOptions.signal)]),
        callOptions.signal,
      );
      const body = toCreateBody(spec, labels, {
        diskVolumeDriver,
        diskId: randomBytes(12).toString("hex"),
        runtime,
        hostsFile: hosts,
      });
      let id: string;
      try {
        // Not cut short by the signal: an engine that got the request may create the container after the client
        // hung up, and nothing would know it to remove it. The create runs to its end, and an abort meanwhile
        // removes what it made.
        id = await dockerCall("create container", { image: spec.image }, async () => {
          const container = await docker.createContainer(body);
          return container.id;
        });
      } catch (error) {
        if (callOptions.signal?.aborted) throw callOptions.signal.reason;
        throw missingDiskDriver(error, diskVolumeDriver) ?? error;
      }
      if (callOptions.signal?.aborted) {
        await docker
          .getContainer(id)
          .remove({ force: true, v: true })
          .catch(() => undefined);
        throw callOptions.signal.reason;
      }
      return { id };
    },

    start(id, callOptions = {}) {
      return dockerCall(
        "start container",
        { containerId: id },
        async () => {
          await docker.getContainer(id).start(abortOption(callOptions.signal));
        },
        callOptions.signal,
      );
    },

    async stop(id, callOptions = {}) {
      try {
        await docker
          .getContainer(id)
          .stop({ t: callOptions.graceSeconds ?? 1, ...abortOption(callOptions.signal) });
      } catch (error) {
        if (callOptions.signal?.aborted) throw callOptions.signal.reason;
        // 304 Not Modified: it was not running.
        if ((error as { statusCode?: unknown }).statusCode === 304) return;
        throw toPoolError(error, "stop container", { containerId: id });
      }
    },

    async remove(id, callOptions = {}) {
      try {
        await docker.getContainer(id).remove({ force: true, v: true, ...abortOption(callOptions.signal) });
      } catch (error) {
        if (callOptions.signal?.aborted) throw callOptions.signal.reason;
        const statusCode = (error as { statusCode?: unknown }).statusCode;
        if (statusCode === 404) return;
        // 409 "removal of container ... is already in progress": someone else is removing it.
        if (statusCode === 409 && /already in progress/i.test(dockerMessage(error))) return;
        throw toPoolError(error, "remove container", { containerId: id });
      }
    },

    inspect(id, callOptions = {}) {
      return dockerCall(
        "inspect container",
        { containerId: id },
        async (): Promise<ContainerInspection> => {
          const info = await docker.getContainer(id).inspect(abortOption(callOptions.signal));
          const exited = !info.State.Running && info.State.Status !== "created";
          return {
            running: info.State.Running === true,
            exitCode: exited ? info.State.ExitCode : null,
            oomKilled: info.State.OOMKilled === true,
            labels: info.Config.Labels ?? {},
            ...(info.State.Running && info.NetworkSettings?.SandboxKey
              ? { networkNamespace: info.NetworkSettings.SandboxKey }
              : {}),
            ...(info.HostConfig?.Runtime ? { runtime: info.HostConfig.Runtime } : {}),
            ...(info.State.Running && info.State.Pid > 0 ? { pid: info.State.Pid } : {}),
          };
        },
        callOptions.signal,
      );
    },

    diskUsage(id, callOptions = {}) {
      const abort = abortOption(callOptions.signal);
      return dockerCall(
        "inspect disk",
        { containerId: id },
        async (): Promise<DiskUsage | undefined> => {
          const info = await docker.getContainer(id).inspect(abort);
          const mount = info.Mounts.find((m) => m.Type === "volume" && m.Driver === diskVolumeDriver);
          if (!mount?.Name) return undefined;
          const volume = await docker.getVolume(mount.Name).inspect(abort);
          const status = (volume.Status ?? {}) as Record<string, unknown>;
          const { sizeBytes, usedBytes, availableBytes } = status;
          if (typeof usedBytes !== "number" || typeof sizeBytes !== "number") return undefined;
          return { sizeBytes, usedBytes, availableBytes: Number(availableBytes) };
        },
        callOptions.signal,
      );
    },

    list(filter, callOptions = {}) {
      return dockerCall(
        "list containers",
        { labels: filter.labels },
        async (): Promise<ContainerSummary[]> => {
          const rows = await docker.listContainers({
            all: true,
            filters: { label: labelFilters(filter) },
            ...abortOption(callOptions.signal),
          });
          return rows.map((row) => ({ id: row.Id, labels: row.Labels ?? {}, state: row.State }));
        },
        callOptions.signal,
      );
    },
  };
}
