import Docker from "dockerode";
import type { ContainerDriver } from "./container-driver.ts";
import { createDockerArchives } from "./docker-archives.ts";
import { createDockerContainers } from "./docker-containers.ts";
import { createDockerEngineChecks } from "./docker-engine-checks.ts";
import {
  type DockerEngineConnection,
  type DockerSshOptions,
  toDockerodeConnection,
} from "./docker-engine-connection.ts";
import { subscribeDockerEvents } from "./docker-events.ts";
import { createDockerExec } from "./docker-exec.ts";
import { createDockerImageDriver } from "./docker-image-driver.ts";
import { createRuntimePreference } from "./docker-runtime-preference.ts";
import { createDockerSshAgent } from "./docker-ssh-agent.ts";
import { createHostsFileSource } from "./hosts-file-volume.ts";

// What the driver decides for one container, defined beside the create body it shapes.
export type { EnginePlacement } from "./docker-create-body.ts";

/**
 * Where the Docker engine is (a socket, TCP with TLS, or SSH: see {@link DockerEngineConnection}) and how the
 * driver uses it. With no connection option set, `DOCKER_HOST` (or the default socket) is used.
 */
export interface DockerDriverOptions extends DockerEngineConnection {
  /**
   * Timeout of each non-streaming API request in milliseconds.
   * @default 60000
   */
  requestTimeoutMs?: number;
  /**
   * The engine's volume driver that bounds `limits.diskBytes` (a volume plugin making a small filesystem per
   * disk; `npx pai engine setup` runs `pai-disk` on the engine's host).
   * @default "pai-disk"
   */
  diskVolumeDriver?: string;
  /**
   * The OCI runtime of containers whose spec names none, when the engine has it (asked once, `GET /info`);
   * otherwise the engine's default runtime. crun starts containers faster than runc (see `npm run bench`).
   * `null` always leaves the choice to the engine.
   * @default "crun"
   */
  preferredRuntime?: string | null;
  /**
   * For network `none`, skip the engine's network setup (`NetworkDisabled`): the runtime still gives the
   * container a network namespace of its own with only `lo` (up), but Docker runs no libnetwork hook (an exec of
   * dockerd per start) and writes no /etc/hosts, so the driver mounts a read-only one naming `localhost` (from a
   * named volume it fills once per engine). Cuts the start of a container by more than half (`npm run bench`).
   * @default true
   */
  skipNoneNetworkSetup?: boolean;
}

/**
 * dockerode's options for an engine reached over SSH: plain HTTP through PAI's SSH transport, not docker-modem's
 * own (a fresh SSH login per request, and a crash on request timeouts).
 */
function overSsh(connection: Record<string, unknown>): Record<string, unknown> {
  return {
    protocol: "http",
    sshOptions: undefined,
    agent: createDockerSshAgent({
      host: String(connection.host),
      port: Number(connection.port),
      username: connection.username as string | undefined,
      sshOptions: connection.sshOptions as DockerSshOptions | undefined,
    }),
  };
}

/**
 * A {@link ContainerDriver} on the Docker Engine API (dockerode). Containers get the hardening of
 * `ContainerSpec` (read-only root, volumes for writable paths, all capabilities dropped, `no-new-privileges`,
 * `Init`, no logging, network `none` unless `host` is asked for); never a bridge network.
 *
 * @example
 * const driver = createDockerDriver();            // DOCKER_HOST or /var/run/docker.sock
 * const remote = createDockerDriver({ host: "10.0.0.5", port: 2376, ca, cert, key }); // TCP + TLS
 * await driver.ping();
 * const { id } = await driver.create({ image: "pai/sandbox:latest" }, { "pai.managed": "true" });
 */
export function createDockerDriver(options: DockerDriverOptions = {}): ContainerDriver {
  const connection = toDockerodeConnection(options);
  const reach = { ...connection, ...(connection.protocol === "ssh" ? overSsh(connection) : {}) };
  const docker = new Docker({
    ...reach,
    timeout: options.requestTimeoutMs ?? 60_000,
  } as Docker.DockerOptions);
  // Builds, pulls and imports stream for as long as they take (a step may print nothing for minutes): no request
  // timeout there, their signals bound them. Over SSH both clients share one transport.
  const streaming = new Docker(reach as Docker.DockerOptions);

  const diskVolumeDriver = options.diskVolumeDriver ?? "pai-disk";
  const runtimeFor = createRuntimePreference(
    docker,
    options.preferredRuntime === undefined ? "crun" : options.preferredRuntime,
  );
  const hostsFileFor = createHostsFileSource(docker, options.skipNoneNetworkSetup ?? true);
  return {
    images: createDockerImageDriver(docker, streaming),
    ...createDockerContainers(docker, { diskVolumeDriver, runtimeFor, hostsFileFor }),
    ...createDockerExec(docker),
    ...createDockerArchives(docker),
    events: (filter, onEvent) => subscribeDockerEvents(docker, filter, onEvent),
    ...createDockerEngineChecks(docker, { diskVolumeDriver, runtimeFor }),
  };
}
