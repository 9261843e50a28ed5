import type { Duplex, Readable, Writable } from "node:stream";
import type { ContainerSpec, ResolvedContainerSpec } from "./container-spec.ts";
import type { ImageDriver } from "./image-driver.ts";

/** What `inspect` reports about one container. */
export interface ContainerInspection {
  running: boolean;
  /** Exit code of the main process; `null` while it has not exited. */
  exitCode: number | null;
  oomKilled: boolean;
  labels: Readonly<Record<string, string>>;
  /**
   * Where the engine's host keeps the container's network namespace while it runs (Docker's `SandboxKey`), for a
   * process on that host to reach its loopback; absent when it does not run or the engine made none (a container
   * without network setup has the one its runtime made: see `pid`).
   */
  networkNamespace?: string | undefined;
  /** Its main process's pid on the engine's host (in the engine's pid namespace), while it runs. */
  pid?: number | undefined;
  /** The OCI runtime it runs under, as the engine names it (`runc`, `crun`, `runsc`...), when the engine says. */
  runtime?: string | undefined;
}

/** How full a container's bounded disk is (`limits.diskBytes`). */
export interface DiskUsage {
  /** The disk's size: what its writable paths may hold together. */
  sizeBytes: number;
  /** In use, files and filesystem metadata. */
  usedBytes: number;
  /** Still free for writing; a write past it fails with ENOSPC. */
  availableBytes: number;
}

/** One row of `list`. */
export interface ContainerSummary {
  id: string;
  labels: Readonly<Record<string, string>>;
  /** Docker's state word: `created`, `running`, `exited`, `dead`, ... */
  state: string;
}

/**
 * What the engine reports about itself (`docker info`): what placement on several engines weighs, and what it
 * offers PAI's containers (`pai doctor` reads it).
 */
export interface EngineInfo {
  /** Memory of the engine's host. */
  memoryBytes: number;
  /** CPUs of the engine's host. */
  cpus: number;
  /** Containers running on the engine now, every owner's. */
  containersRunning: number;
  /**
   * The machine architecture of the engine's host as the engine says it (Docker: `uname -m`, `x86_64` or
   * `aarch64`; some engines say `amd64`/`arm64`): what binaries its containers run. Not this process's
   * `process.arch` — a remote engine may differ. Empty when the engine does not say.
   */
  architecture: string;
  /** The engine's host name (`Name`): the name of the machine it runs on. */
  hostname: string;
  /** The engine's version, e.g. `26.1.5`. */
  serverVersion: string;
  /** The OCI runtimes registered with the engine, by name (`runc`, `crun`, ...). */
  runtimes: string[];
  /** The runtime of a container that names none. */
  defaultRuntime: string;
  /**
   * The volume plugins the engine has loaded (`local` and plugins met so far: the engine loads a plugin of
   * `/run/docker/plugins` on its first use).
   */
  volumePlugins: string[];
}

/** What an engine offers the containers of one spec: see `ContainerDriver.checkEngine`. */
export interface EngineCheck {
  /**
   * The OCI runtime those containers run on: the spec's, the driver's preferred one (crun) when the engine has it,
   * or the engine's default.
   */
  runtime: string;
}

/** Selects containers by labels (every pair must match). */
export interface LabelFilter {
  labels: Readonly<Record<string, string>>;
}

/** A container event the pool cares about. */
export interface ContainerEvent {
  type: "die" | "oom";
  containerId: string;
  /** Exit code for `die` when the engine reports one. */
  exitCode: number | null;
  labels: Readonly<Record<string, string>>;
}

/** Options of a one-shot `exec`. */
export interface ExecOptions {
  /** argv; no shell is involved unless you run one. */
  cmd: readonly string[];
  /** `uid:gid` or name. @default the container's user */
  user?: string;
  env?: Readonly<Record<string, string>>;
  /** @default the container's working directory */
  workingDir?: string;
  /** Written to the process's stdin, which is then closed. Without it stdin is not attached. */
  stdin?: string | Uint8Array | Readable;
  /**
   * Stops waiting and closes the connection. `docker exec` has no kill: the process itself keeps running
   * unless the caller kills it (another exec) or removes the container.
   */
  signal?: AbortSignal;
  /**
   * Per-stream cap on the output kept; beyond it the tail is kept and `truncated` is set.
   * @default 16777216 (16 MiB)
   */
  maxOutputBytes?: number;
}

/** Outcome of a one-shot `exec`. A non-zero exit code is a value, not an error. */
export interface ExecResult {
  /** The process's exit code; `-1` when the engine did not report one (the connection broke). */
  exitCode: number;
  /** UTF-8 decoded stdout (tail, when truncated). */
  stdout: string;
  stderr: string;
  /** True when either stream exceeded `maxOutputBytes`. */
  truncated: boolean;
}

/** Options of a long-lived exec session. */
export interface ExecDuplexOptions {
  cmd: readonly string[];
  user?: string;
  env?: Readonly<Record<string, string>>;
  workingDir?: string;
  signal?: AbortSignal;
}

/**
 * A live exec session (hijacked connection, stdin open, no TTY).
 *
 * `stream` is the raw connection. Its writable side is the process's plain stdin; `end()` closes stdin
 * (half-close) while output keeps flowing. Its readable side carries Docker's multiplexed frames (8-byte header:
 * stream type, 3 zero bytes, big-endian payload length) and is already consumed by the demuxer feeding
 * `stdout` and `stderr` — read those, not `stream`.
 */
export interface ExecSession {
  stream: Duplex;
  /** Same object as `stream`, typed for writing stdin. */
  stdin: Writable;
  stdout: Readable;
  stderr: Readable;
  /** State of the exec'd process; `exitCode` is `null` while it runs. */
  inspect(): Promise<{ running: boolean; exitCode: number | null }>;
  /** Destroys the connection (the process may keep running; see `ExecOptions.signal`). */
  close(): void;
}

/**
 * Everything `@pai/pool` (and the capabilities on top of it) needs from a container engine. `createDockerDriver`
 * implements it with dockerode; tests use `createFakeDriver` from `@pai/pool/testing`; a Kubernetes backend
 * would implement the same interface. No dockerode type appears here.
 *
 * Errors are `PoolError`s: `DOCKER_UNAVAILABLE` when the engine cannot be reached, `NOT_FOUND` for a missing
 * container or path, `CONTAINER_FAILED` otherwise. An aborted call rejects with the signal's reason.
 */
export interface ContainerDriver {
  /** Creates (does not start) a container from `spec` with `labels` (merged over `spec.labels`). */
  create(
    spec: ContainerSpec | ResolvedContainerSpec,
    labels: Readonly<Record<string, string>>,
    options?: { signal?: AbortSignal },
  ): Promise<{ id: string }>;
  /** Starts a created or stopped container (its volumes and files are where it left them). */
  start(id: string, options?: { signal?: AbortSignal }): Promise<void>;
  /**
   * Stops a running container and keeps it (its volumes and files stay; every process in it is gone): its main
   * process gets SIGTERM, then SIGKILL after `graceSeconds`. A stopped container is not an error.
   * @throws PoolError `NOT_FOUND` when there is no such container.
   */
  stop(id: string, options?: { signal?: AbortSignal; graceSeconds?: number }): Promise<void>;
  /** Force-removes the container and its anonymous volumes. A container that is already gone is not an error. */
  remove(id: string, options?: { signal?: AbortSignal }): Promise<void>;
  /** @throws PoolError `NOT_FOUND` when there is no such container. */
  inspect(id: string, options?: { signal?: AbortSignal }): Promise<ContainerInspection>;
  /**
   * How full the container's disk is (e.g. to tell "No space left on device" from other failures);
   * `undefined` when its writable paths are not on a bounded disk (`limits.diskBytes: null`) or it is stopped.
   * @throws PoolError `NOT_FOUND` when there is no such container.
   */
  diskUsage(id: string, options?: { signal?: AbortSignal }): Promise<DiskUsage | undefined>;
  /** Every container (running or not) whose labels match. */
  list(filter: LabelFilter, options?: { signal?: AbortSignal }): Promise<ContainerSummary[]>;
  /** Runs a command to completion and collects its demultiplexed output. */
  exec(id: string, options: ExecOptions): Promise<ExecResult>;
  /** Starts a command and hands back its live, hijacked connection. */
  execDuplex(id: string, options: ExecDuplexOptions): Promise<ExecSession>;
  /**
   * Extracts a tar archive into directory `path` of the container (which may be created but not started).
   * @throws PoolError `NOT_FOUND` when `path` does not exist.
   */
  putArchive(
    id: string,
    path: string,
    tar: Readable | Uint8Array,
    options?: { signal?: AbortSignal },
  ): Promise<void>;
  /**
   * A tar stream of `path` (a file or a directory, as its last path element).
   * @throws PoolError `NOT_FOUND` when `path` does not exist.
   */
  getArchive(id: string, path: string, options?: { signal?: AbortSignal }): Promise<Readable>;
  /**
   * Subscribes to `die`/`oom` events of containers matching `filter`. Returns the unsubscribe function.
   * Delivery is best effort (the connection is re-established after an engine restart; events in the gap are
   * lost), so callers still validate containers before use.
   */
  events(filter: LabelFilter, onEvent: (event: ContainerEvent) => void): () => void;
  /** @throws PoolError `DOCKER_UNAVAILABLE` when the engine does not answer. */
  ping(options?: { signal?: AbortSignal }): Promise<void>;
  /** The engine's host and load (`GET /info`). */
  info(options?: { signal?: AbortSignal }): Promise<EngineInfo>;
  /**
   * Checks, before an engine's first container, that it can run containers of `spec`: the image is there
   * (nothing is pulled), and the disk volume plugin answers when the spec bounds the disk. Tells the runtime they
   * get.
   * @throws PoolError `NOT_FOUND` for a missing image, `CONTAINER_FAILED` (`details.reason: "disk-driver-missing"`)
   * for a missing disk plugin, `DOCKER_UNAVAILABLE` when the engine does not answer.
   */
  checkEngine(
    spec: ContainerSpec | ResolvedContainerSpec,
    options?: { signal?: AbortSignal },
  ): Promise<EngineCheck>;
  /**
   * The engine's images: what PAI needs to build its own images there (`provideImage`), list and prune them.
   * Absent on a driver that cannot build: it runs only images its engine already has.
   */
  readonly images?: ImageDriver;
}
