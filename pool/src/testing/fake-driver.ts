import { randomBytes } from "node:crypto";
import { PassThrough, Readable } from "node:stream";
import type {
  ContainerDriver,
  ContainerEvent,
  ContainerInspection,
  EngineCheck,
  EngineInfo,
  ExecOptions,
  ExecResult,
  ExecSession,
  LabelFilter,
} from "../container-driver.ts";
import { type ResolvedContainerSpec, resolveContainerSpec } from "../container-spec.ts";
import { PoolError } from "../pool-error.ts";

/** A container of the {@link FakeDriver}. */
export interface FakeContainer {
  id: string;
  spec: ResolvedContainerSpec;
  labels: Record<string, string>;
  status: "created" | "running" | "exited";
  exitCode: number | null;
  oomKilled: boolean;
  /** Archives put into the container, by path (stored as given, not extracted). */
  archives: Map<string, Buffer>;
  /** What `diskUsage` reports as used; set it to simulate a filling disk. */
  diskUsedBytes: number;
}

/** Options of {@link createFakeDriver}. */
export interface FakeDriverOptions {
  /** Delay of each `create` call. @default 0 */
  createDelayMs?: number;
  /** Delay of each `start` call. @default 0 */
  startDelayMs?: number;
  /** Delay of each `remove` call. @default 0 */
  removeDelayMs?: number;
  /**
   * Decides whether the n-th `create` call (1-based) fails: return an error (or `true` for a generic one).
   * Replaceable later with `setFailCreate`.
   */
  failCreate?: (attempt: number) => Error | boolean | undefined;
  /**
   * The engine's host as `info` reports it (`containersRunning` is counted from the fake's containers).
   * @default 8 GiB, 4 CPUs, architecture `x86_64`
   */
  host?: { memoryBytes?: number; cpus?: number; architecture?: string };
  /** The images the engine has (`checkEngine` refuses others). @default every image */
  images?: readonly string[];
  /** The runtime `checkEngine` reports for a spec that names none. @default "runc" */
  defaultRuntime?: string;
  /** Answers `exec`. @default exit 0 with empty output */
  onExec?: (container: FakeContainer, options: ExecOptions) => ExecResult | Promise<ExecResult>;
}

/** Call counters of a {@link FakeDriver}. */
export interface FakeDriverCalls {
  create: number;
  start: number;
  stop: number;
  remove: number;
  inspect: number;
  list: number;
  exec: number;
  ping: number;
  info: number;
  checkEngine: number;
}

/** An in-memory {@link ContainerDriver} for unit tests, with failure injection and counters. */
export interface FakeDriver extends ContainerDriver {
  /** Containers that exist (created and not removed). */
  readonly containers: ReadonlyMap<string, FakeContainer>;
  readonly calls: FakeDriverCalls;
  /** `create` calls in flight right now, and the most seen at once. */
  readonly inFlightCreates: number;
  readonly peakInFlightCreates: number;
  /** Most containers that existed at once. */
  readonly peakContainers: number;
  /** Stops a container's main process and emits `die` (preceded by `oom` when `oom` is set). */
  kill(id: string, options?: { oom?: boolean; exitCode?: number }): void;
  /** Adds a container created elsewhere (a stray from an earlier process, say). */
  addContainer(labels: Record<string, string>, options?: { running?: boolean; image?: string }): string;
  setFailCreate(failCreate: FakeDriverOptions["failCreate"]): void;
  /** When set, every call rejects with `DOCKER_UNAVAILABLE` (the engine went away). */
  setUnavailable(unavailable: boolean): void;
  /** Makes `ping` answer after `ms` milliseconds (a busy engine); its signal still aborts it. */
  setPingDelay(ms: number): void;
}

function delay(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0) return signal?.aborted ? Promise.reject(signal.reason) : Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

function matches(labels: Record<string, string>, filter: LabelFilter): boolean {
  return Object.entries(filter.labels).every(([key, value]) => labels[key] === value);
}

/**
 * Creates an in-memory {@link FakeDriver}: containers are records, `start` marks them running, `remove` forgets
 * them, `kill` simulates a crash with engine events. Use it to unit-test code written against
 * `ContainerDriver` — never to claim Docker behaviour.
 *
 * @example
 * const driver = createFakeDriver({ failCreate: (n) => n <= 2 });
 * const pool = createContainerPool({ driver, spec: { image: "fake" }, min: 1 });
 */
export function createFakeDriver(options: FakeDriverOptions = {}): FakeDriver {
  const containers = new Map<string, FakeContainer>();
  const subscribers = new Set<{ filter: LabelFilter; onEvent: (event: ContainerEvent) => void }>();
  const calls: FakeDriverCalls = {
    create: 0,
    start: 0,
    stop: 0,
    remove: 0,
    inspect: 0,
    list: 0,
    exec: 0,
    ping: 0,
    info: 0,
    checkEngine: 0,
  };
  let failCreate = options.failCreate;
  let unavailable = false;
  let pingDelayMs = 0;
  let inFlightCreates = 0;
  let peakInFlightCreates = 0;
  let peakContainers = 0;

  const checkAvailable = () => {
    if (unavailable) throw new PoolError("DOCKER_UNAVAILABLE", "fake engine unavailable");
  };
  const get = (id: string): FakeContainer => {
    const container = containers.get(id);
    if (!container)
      throw new PoolError("NOT_FOUND", `No such container: ${id}`, { details: { containerId: id } });
    return container;
  };
  const emit = (container: FakeContainer, event: ContainerEvent) => {
    for (const subscriber of subscribers) {
      if (matches(container.labels, subscriber.filter)) subscriber.onEvent(event);
    }
  };
  const add = (container: FakeContainer) => {
    containers.set(container.id, container);
    peakContainers = Math.max(peakContainers, containers.size);
  };

  const driver: FakeDriver = {
    get containers() {
      return containers;
    },
    calls,
    get inFlightCreates() {
      return inFlightCreates;
    },
    get peakInFlightCreates() {
      return peakInFlightCreates;
    },
    get peakContainers() {
      return peakContainers;
    },

    async create(spec, labels, callOptions = {}) {
      calls.create++;
      inFlightCreates++;
      peakInFlightCreates = Math.max(peakInFlightCreates, inFlightCreates);
      try {
        await delay(options.createDelayMs ?? 0, callOptions.signal);
        checkAvailable();
        const failure = failCreate?.(calls.create);
        if (failure) {
          throw failure instanceof Error
            ? failure
            : new PoolError("CONTAINER_FAILED", `fake create #${calls.create} failed`);
        }
        const resolved = resolveContainerSpec(spec);
        const id = randomBytes(32).toString("hex");
        add({
          id,
          spec: resolved,
          labels: { ...resolved.labels, ...labels },
          status: "created",
          exitCode: null,
          oomKilled: false,
          archives: new Map(),
          diskUsedBytes: 0,
        });
        return { id };
      } finally {
        inFlightCreates--;
      }
    },

    async start(id, callOptions = {}) {
      calls.start++;
      await delay(options.startDelayMs ?? 0, callOptions.signal);
      checkAvailable();
      get(id).status = "running";
    },

    async stop(id, callOptions = {}) {
      calls.stop++;
      await delay(0, callOptions.signal);
      checkAvailable();
      const container = get(id);
      if (container.status === "running") {
        container.status = "exited";
        container.exitCode = 143;
      }
    },

    async remove(id) {
      calls.remove++;
      await delay(options.removeDelayMs ?? 0);
      checkAvailable();
      containers.delete(id);
    },

    async inspect(id): Promise<ContainerInspection> {
      calls.inspect++;
      checkAvailable();
      const container = get(id);
      return {
        running: container.status === "running",
        exitCode: container.exitCode,
        oomKilled: container.oomKilled,
        labels: { ...container.labels },
      };
    },

    async diskUsage(id) {
      checkAvailable();
      const container = get(id);
      const sizeBytes = container.spec.limits.diskBytes;
      if (sizeBytes === null || container.status !== "running") return undefined;
      const usedBytes = Math.min(container.diskUsedBytes, sizeBytes);
      return { sizeBytes, usedBytes, availableBytes: sizeBytes - usedBytes };
    },

    async list(filter) {
      calls.list++;
      checkAvailable();
      return [...containers.values()]
        .filter((container) => matches(container.labels, filter))
        .map((container) => ({ id: container.id, labels: { ...container.labels }, state: container.status }));
    },

    async exec(id, execOptions) {
      calls.exec++;
      checkAvailable();
      const container = get(id);
      if (container.status !== "running") {
        throw new PoolError("CONTAINER_FAILED", `Container ${id} is not running`);
      }
      return options.onExec
        ? options.onExec(container, execOptions)
        : { exitCode: 0, stdout: "", stderr: "", truncated: false };
    },

    async execDuplex(id): Promise<ExecSession> {
      checkAvailable();
      const container = get(id);
      if (container.status !== "running") {
        throw new PoolError("CONTAINER_FAILED", `Container ${id} is not running`);
      }
      // Behaves like `cat`: stdin comes back on stdout; ending stdin ends the process with exit code 0.
      const stdin = new PassThrough();
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      let running = true;
      stdin.pipe(stdout);
      stdin.on("end", () => {
        running = false;
        stderr.end();
      });
      return {
        stream: stdin,
        stdin,
        stdout,
        stderr,
        inspect: async () => ({ running, exitCode: running ? null : 0 }),
        close: () => {
          running = false;
          stdin.destroy();
          stdout.destroy();
          stderr.destroy();
        },
      };
    },

    async putArchive(id, path, tar) {
      checkAvailable();
      const container = get(id);
      const chunks: Buffer[] = [];
      if (tar instanceof Readable) {
        for await (const chunk of tar) chunks.push(Buffer.from(chunk as Uint8Array));
      } else chunks.push(Buffer.from(tar));
      container.archives.set(path, Buffer.concat(chunks));
    },

    async getArchive(id, path) {
      checkAvailable();
      const archive = get(id).archives.get(path);
      if (!archive) throw new PoolError("NOT_FOUND", `No such path in fake container: ${path}`);
      return Readable.from([archive]);
    },

    events(filter, onEvent) {
      const subscriber = { filter, onEvent };
      subscribers.add(subscriber);
      return () => {
        subscribers.delete(subscriber);
      };
    },

    async ping(callOptions = {}) {
      calls.ping++;
      await delay(pingDelayMs, callOptions.signal);
      checkAvailable();
    },

    async checkEngine(spec): Promise<EngineCheck> {
      calls.checkEngine++;
      checkAvailable();
      if (options.images && !options.images.includes(spec.image)) {
        throw new PoolError("NOT_FOUND", `Image ${spec.image} is not on the fake engine`, {
          details: { image: spec.image },
        });
      }
      return { runtime: spec.runtime ?? options.defaultRuntime ?? "runc" };
    },

    async info(): Promise<EngineInfo> {
      calls.info++;
      checkAvailable();
      return {
        memoryBytes: options.host?.memoryBytes ?? 8 * 1024 ** 3,
        cpus: options.host?.cpus ?? 4,
        containersRunning: [...containers.values()].filter((c) => c.status === "running").length,
        architecture: options.host?.architecture ?? "x86_64",
        hostname: "fake-engine",
        serverVersion: "0.0.0-fake",
        runtimes: [...new Set(["runc", options.defaultRuntime ?? "runc"])],
        defaultRuntime: "runc",
        volumePlugins: ["local"],
      };
    },

    kill(id, killOptions = {}) {
      const container = get(id);
      container.status = "exited";
      container.exitCode = killOptions.exitCode ?? (killOptions.oom ? 137 : 1);
      container.oomKilled = killOptions.oom === true;
      if (killOptions.oom) {
        emit(container, { type: "oom", containerId: id, exitCode: null, labels: container.labels });
      }
      emit(container, {
        type: "die",
        containerId: id,
        exitCode: container.exitCode,
        labels: container.labels,
      });
    },

    addContainer(labels, addOptions = {}) {
      const id = randomBytes(32).toString("hex");
      add({
        id,
        spec: resolveContainerSpec({ image: addOptions.image ?? "fake" }),
        labels: { ...labels },
        status: addOptions.running === false ? "exited" : "running",
        exitCode: addOptions.running === false ? 0 : null,
        oomKilled: false,
        archives: new Map(),
        diskUsedBytes: 0,
      });
      return id;
    },

    setFailCreate(next) {
      failCreate = next;
    },

    setUnavailable(next) {
      unavailable = next;
    },

    setPingDelay(ms) {
      pingDelayMs = ms;
    },
  };
  return driver;
}
