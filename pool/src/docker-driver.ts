import { randomBytes } from "node:crypto";
import { type Duplex, PassThrough, Readable } from "node:stream";
import Docker from "dockerode";
import type {
  ContainerDriver,
  ContainerEvent,
  ContainerInspection,
  ContainerSummary,
  DiskUsage,
  EngineInfo,
  ExecDuplexOptions,
  ExecOptions,
  ExecResult,
  ExecSession,
  LabelFilter,
} from "./container-driver.ts";
import { type ContainerSpec, type ResolvedContainerSpec, resolveContainerSpec } from "./container-spec.ts";
import { dockerCall, dockerMessage, isAbortError, toPoolError } from "./docker-call.ts";
import {
  type DockerEngineConnection,
  type DockerSshOptions,
  toDockerodeConnection,
} from "./docker-engine-connection.ts";
import { createDockerImageDriver } from "./docker-image-driver.ts";
import { createDockerSshAgent } from "./docker-ssh-agent.ts";
import { createDockerStreamDemuxer } from "./docker-stream-demuxer.ts";
import { ensureHostsFile } from "./hosts-file-volume.ts";
import { PoolError } from "./pool-error.ts";
import { createTailBuffer } from "./tail-buffer.ts";

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

const defaultMaxOutputBytes = 16 * 1024 * 1024;

function labelFilters(filter: LabelFilter): string[] {
  return Object.entries(filter.labels).map(([key, value]) => `${key}=${value}`);
}

function envList(env: Readonly<Record<string, string>> | undefined): string[] | undefined {
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

/** The Engine API body of `POST /containers/create` for a spec. Exported for tests of the mapping. @internal */
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

function diskDriverMissing(diskVolumeDriver: string, cause?: PoolError): PoolError {
  return new PoolError(
    "CONTAINER_FAILED",
    `The engine has no "${diskVolumeDriver}" volume plugin, which bounds a container's disk (limits.diskBytes): ` +
      "run `npx pai engine setup` as root on the engine's host, or set limits.diskBytes to null for unbounded volumes",
    { cause, details: { ...cause?.details, reason: "disk-driver-missing", diskVolumeDriver } },
  );
}

/** A clearer error for a create that failed because the engine lacks the disk volume plugin. */
function missingDiskDriver(error: unknown, diskVolumeDriver: string): PoolError | undefined {
  // Docker answers 404 (after ~15 s of looking for the plugin's socket).
  if (!PoolError.hasCode(error, "NOT_FOUND") && !PoolError.hasCode(error, "CONTAINER_FAILED"))
    return undefined;
  if (!error.message.includes(`volume plugin ${diskVolumeDriver}: plugin "${diskVolumeDriver}" not found`)) {
    return undefined;
  }
  return diskDriverMissing(diskVolumeDriver, error);
}

async function exitCodeOf(exec: Docker.Exec): Promise<{ running: boolean; exitCode: number | null }> {
  const info = await exec.inspect();
  return { running: info.Running, exitCode: info.Running ? null : (info.ExitCode ?? null) };
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

  async function startExec(
    id: string,
    execOptions: ExecDuplexOptions & { attachStdin: boolean },
  ): Promise<{ exec: Docker.Exec; socket: Duplex }> {
    const container = docker.getContainer(id);
    const exec = await container.exec({
      Cmd: [...execOptions.cmd],
      ...(execOptions.user !== undefined ? { User: execOptions.user } : {}),
      ...(execOptions.env !== undefined ? { Env: envList(execOptions.env) } : {}),
      ...(execOptions.workingDir !== undefined ? { WorkingDir: execOptions.workingDir } : {}),
      AttachStdin: execOptions.attachStdin,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      ...(execOptions.signal ? { abortSignal: execOptions.signal } : {}),
    });
    const socket = (await exec.start({
      hijack: true,
      stdin: execOptions.attachStdin,
      Tty: false,
      ...(execOptions.signal ? { abortSignal: execOptions.signal } : {}),
    })) as Duplex;
    return { exec, socket };
  }

  const diskVolumeDriver = options.diskVolumeDriver ?? "pai-disk";
  const preferredRuntime = options.preferredRuntime === undefined ? "crun" : options.preferredRuntime;
  /** The preferred runtime when the engine has it; asked once (again after a failed answer). */
  let defaultRuntime: Promise<string | undefined> | undefined;
  function runtimeFor(spec: ContainerSpec | ResolvedContainerSpec): Promise<string | undefined> {
    if (spec.runtime || preferredRuntime === null) return Promise.resolve(undefined);
    defaultRuntime ??= docker
      .info()
      .then((info: { Runtimes?: Record<string, unknown> }) =>
        info.Runtimes && preferredRuntime in info.Runtimes ? preferredRuntime : undefined,
      );
    defaultRuntime.catch(() => {
      defaultRuntime = undefined;
    });
    return defaultRuntime;
  }

  /** What the engine says about itself, from `GET /info`. */
  async function engineInfo(signal?: AbortSignal): Promise<EngineInfo> {
    // dockerode's typings omit the options argument its `info` takes.
    const info = (await (docker.info as unknown as (options: object) => Promise<unknown>).call(
      docker,
      signal ? { abortSignal: signal } : {},
    )) as {
      MemTotal?: number;
      NCPU?: number;
      ContainersRunning?: number;
      Name?: string;
      ServerVersion?: string;
      Architecture?: string;
      Runtimes?: Record<string, unknown>;
      DefaultRuntime?: string;
      Plugins?: { Volume?: string[] | null };
    };
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

  const skipNoneNetworkSetup = options.skipNoneNetworkSetup ?? true;
  /** The engine-side path of the hosts file for network `none`; made once (again after a failure). */
  let hostsFile: Promise<string> | undefined;
  function hostsFileFor(spec: ContainerSpec | ResolvedContainerSpec, signal?: AbortSignal) {
    if (!skipNoneNetworkSetup || (spec.network ?? "none") !== "none") return Promise.resolve(undefined);
    hostsFile ??= ensureHostsFile(docker, spec.image, signal);
    hostsFile.catch(() => {
      hostsFile = undefined;
    });
    return hostsFile;
  }

  const driver: ContainerDriver = {
    images: createDockerImageDriver(docker, streaming),

    async create(spec, labels, callOptions = {}) {
      const [runtime, hosts] = await dockerCall(
        "prepare the engine",
        { image: spec.image },
        () => Promise.all([runtimeFor(spec), hostsFileFor(spec, callOptions.signal)]),
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
          await docker
            .getContainer(id)
            .start(
              callOptions.signal ? ({ abortSignal: callOptions.signal } as Record<string, unknown>) : {},
            );
        },
        callOptions.signal,
      );
    },

    async stop(id, callOptions = {}) {
      try {
        await docker.getContainer(id).stop({
          t: callOptions.graceSeconds ?? 1,
          ...(callOptions.signal ? { abortSignal: callOptions.signal } : {}),
        });
      } catch (error) {
        if (callOptions.signal?.aborted) throw callOptions.signal.reason;
        // 304 Not Modified: it was not running.
        if ((error as { statusCode?: unknown }).statusCode === 304) return;
        throw toPoolError(error, "stop container", { containerId: id });
      }
    },

    async remove(id, callOptions = {}) {
      try {
        await docker.getContainer(id).remove({
          force: true,
          v: true,
          ...(callOptions.signal ? { abortSignal: callOptions.signal } : {}),
        });
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
          const info = await docker
            .getContainer(id)
            .inspect(
              callOptions.signal ? ({ abortSignal: callOptions.signal } as Record<string, unknown>) : {},
            );
          const exited = !info.State.Running && info.State.Status !== "created";
          return {
            running: info.State.Running === true,
            exitCode: exited ? info.State.ExitCode : null,
            oomKilled: info.State.OOMKilled === true,
            labels: info.Config.Labels ?? {},
          };
        },
        callOptions.signal,
      );
    },

    diskUsage(id, callOptions = {}) {
      const abort = callOptions.signal ? { abortSignal: callOptions.signal } : {};
      return dockerCall(
        "inspect disk",
        { containerId: id },
        async (): Promise<DiskUsage | undefined> => {
          const info = await docker.getContainer(id).inspect(abort as Record<string, unknown>);
          const mount = info.Mounts.find((m) => m.Type === "volume" && m.Driver === diskVolumeDriver);
          if (!mount?.Name) return undefined;
          const volume = await docker.getVolume(mount.Name).inspect(abort as Record<string, unknown>);
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
            ...(callOptions.signal ? { abortSignal: callOptions.signal } : {}),
          });
          return rows.map((row) => ({ id: row.Id, labels: row.Labels ?? {}, state: row.State }));
        },
        callOptions.signal,
      );
    },

    exec(id, execOptions: ExecOptions) {
      return dockerCall(
        "exec in container",
        { containerId: id },
        async (): Promise<ExecResult> => {
          const { signal } = execOptions;
          signal?.throwIfAborted();
          const attachStdin = execOptions.stdin !== undefined;
          const { exec, socket } = await startExec(id, { ...execOptions, attachStdin });
          const max = execOptions.maxOutputBytes ?? defaultMaxOutputBytes;
          const stdout = createTailBuffer(max);
          const stderr = createTailBuffer(max);
          const demuxer = createDockerStreamDemuxer((stream, payload) =>
            (stream === 2 ? stderr : stdout).push(payload),
          );
          await new Promise<void>((resolve, reject) => {
            let done = false;
            const finish = (error?: unknown) => {
              if (done) return;
              done = true;
              signal?.removeEventListener("abort", onAbort);
              if (error) {
                socket.destroy();
                reject(error);
              } else resolve();
            };
            const onAbort = () => finish(signal?.reason);
            signal?.addEventListener("abort", onAbort, { once: true });
            socket.on("data", (chunk: Buffer) => demuxer.write(chunk));
            socket.on("end", () => finish());
            socket.on("close", () => finish());
            socket.on("error", (error) => finish(error));
            if (attachStdin) {
              const input = execOptions.stdin;
              if (input instanceof Readable) {
                input.on("error", (error) => finish(error));
                input.pipe(socket);
              } else {
                socket.end(typeof input === "string" ? Buffer.from(input) : Buffer.from(input as Uint8Array));
              }
            }
          });
          // The exec's state can lag the end of its stream by a few milliseconds.
          let state = await exitCodeOf(exec);
          for (let attempt = 0; state.running && attempt < 50; attempt++) {
            await new Promise((resolve) => setTimeout(resolve, 10));
            state = await exitCodeOf(exec);
          }
          return {
            exitCode: state.exitCode ?? -1,
            stdout: stdout.toBuffer().toString("utf8"),
            stderr: stderr.toBuffer().toString("utf8"),
            truncated: stdout.truncated || stderr.truncated,
          };
        },
        execOptions.signal,
      );
    },

    execDuplex(id, execOptions) {
      return dockerCall(
        "exec in container",
        { containerId: id },
        async (): Promise<ExecSession> => {
          execOptions.signal?.throwIfAborted();
          const { exec, socket } = await startExec(id, { ...execOptions, attachStdin: true });
          const stdout = new PassThrough();
          const stderr = new PassThrough();
          const demuxer = createDockerStreamDemuxer((stream, payload) => {
            (stream === 2 ? stderr : stdout).write(payload);
          });
          socket.on("data", (chunk: Buffer) => demuxer.write(chunk));
          const endOutputs = () => {
            stdout.end();
            stderr.end();
          };
          socket.on("end", endOutputs);
          socket.on("close", endOutputs);
          socket.on("error", (error) => {
            stdout.destroy(error);
            stderr.destroy(error);
          });
          const onAbort = () => socket.destroy();
          execOptions.signal?.addEventListener("abort", onAbort, { once: true });
          socket.on("close", () => execOptions.signal?.removeEventListener("abort", onAbort));
          return {
            stream: socket,
            stdin: socket,
            stdout,
            stderr,
            inspect: () => dockerCall("inspect exec", { containerId: id }, () => exitCodeOf(exec)),
            close: () => socket.destroy(),
          };
        },
        execOptions.signal,
      );
    },

    putArchive(id, path, tar, callOptions = {}) {
      return dockerCall(
        "put archive",
        { containerId: id, path },
        async () => {
          const file = tar instanceof Readable ? tar : Buffer.from(tar);
          await docker.getContainer(id).putArchive(file as unknown as string, {
            path,
            ...(callOptions.signal ? { abortSignal: callOptions.signal } : {}),
          });
        },
        callOptions.signal,
      );
    },

    getArchive(id, path, callOptions = {}) {
      return dockerCall(
        "get archive",
        { containerId: id, path },
        async () => {
          const stream = await docker.getContainer(id).getArchive({
            path,
            ...(callOptions.signal ? { abortSignal: callOptions.signal } : {}),
          });
          return stream as unknown as Readable;
        },
        callOptions.signal,
      );
    },

    events(filter, onEvent) {
      let stopped = false;
      let current: Readable | undefined;
      let retryTimer: NodeJS.Timeout | undefined;
      let retryDelay = 500;
      const controller = new AbortController();

      const connect = async () => {
        if (stopped) return;
        let stream: Readable;
        try {
          stream = (await docker.getEvents({
            filters: { type: ["container"], event: ["die", "oom"], label: labelFilters(filter) },
            abortSignal: controller.signal,
          } as Docker.GetEventsOptions)) as unknown as Readable;
        } catch {
          scheduleReconnect();
          return;
        }
        if (stopped) {
          stream.destroy();
          return;
        }
        current = stream;
        retryDelay = 500;
        let pending = "";
        stream.setEncoding("utf8");
        stream.on("data", (text: string) => {
          pending += text;
          let newline = pending.indexOf("\n");
          while (newline >= 0) {
            const line = pending.slice(0, newline).trim();
            pending = pending.slice(newline + 1);
            newline = pending.indexOf("\n");
            if (line === "") continue;
            let raw: {
              Action?: string;
              status?: string;
              id?: string;
              Actor?: { ID?: string; Attributes?: Record<string, string> };
            };
            try {
              raw = JSON.parse(line);
            } catch {
              continue;
            }
            const action = raw.Action ?? raw.status;
            const containerId = raw.Actor?.ID ?? raw.id;
            if ((action !== "die" && action !== "oom") || !containerId) continue;
            const attributes = raw.Actor?.Attributes ?? {};
            const exitCode = attributes.exitCode !== undefined ? Number(attributes.exitCode) : null;
            const event: ContainerEvent = {
              type: action,
              containerId,
              exitCode: exitCode !== null && Number.isFinite(exitCode) ? exitCode : null,
              labels: attributes,
            };
            try {
              onEvent(event);
            } catch {
              // A listener's bug must not end the subscription.
            }
          }
        });
        const onGone = () => {
          if (current === stream) current = undefined;
          scheduleReconnect();
        };
        stream.on("end", onGone);
        stream.on("close", onGone);
        stream.on("error", () => {});
      };

      const scheduleReconnect = () => {
        if (stopped || retryTimer) return;
        retryTimer = setTimeout(() => {
          retryTimer = undefined;
          void connect();
        }, retryDelay);
        retryTimer.unref();
        retryDelay = Math.min(retryDelay * 2, 30_000);
      };

      void connect();
      return () => {
        stopped = true;
        if (retryTimer) clearTimeout(retryTimer);
        controller.abort();
        current?.destroy();
      };
    },

    ping(callOptions = {}) {
      return dockerCall(
        "ping",
        {},
        async () => {
          try {
            const ping = docker.ping as unknown as (options: Record<string, unknown>) => Promise<unknown>;
            await ping.call(docker, callOptions.signal ? { abortSignal: callOptions.signal } : {});
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
          try {
            const image = docker.getImage(resolved.image);
            // dockerode's typings omit the abort signal its `inspect` takes.
            await (image.inspect as unknown as (options: object) => Promise<unknown>).call(
              image,
              signal ? { abortSignal: signal } : {},
            );
          } catch (error) {
            const mapped = toPoolError(error, "inspect the image", { image: resolved.image });
            if (!PoolError.hasCode(mapped, "NOT_FOUND")) throw mapped;
            throw new PoolError(
              "NOT_FOUND",
              `Image ${resolved.image} is not on the engine (nothing is pulled: load it there first)`,
              { cause: mapped, details: { image: resolved.image } },
            );
          }
          let facts = await engineInfo(signal);
          if (resolved.limits.diskBytes !== null && !facts.volumePlugins.includes(diskVolumeDriver)) {
            // The engine loads a plugin of the plugins folder on first use: asking every driver about a volume
            // that does not exist makes it look (a 404 is the expected answer), then it lists the plugin.
            await docker
              .getVolume(`pai-probe-${randomBytes(8).toString("hex")}`)
              .inspect(signal ? { abortSignal: signal } : {})
              .catch((error: unknown) => {
                const mapped = toPoolError(error, "look for the disk plugin");
                if (!PoolError.hasCode(mapped, "NOT_FOUND")) throw mapped;
              });
            facts = await engineInfo(signal);
            if (!facts.volumePlugins.includes(diskVolumeDriver)) throw diskDriverMissing(diskVolumeDriver);
          }
          const preferred = resolved.runtime === null ? await runtimeFor(resolved) : resolved.runtime;
          return { runtime: preferred ?? facts.defaultRuntime };
        },
        signal,
      );
    },

    info(callOptions = {}) {
      return dockerCall("engine info", {}, () => engineInfo(callOptions.signal), callOptions.signal);
    },
  };
  return driver;
}
