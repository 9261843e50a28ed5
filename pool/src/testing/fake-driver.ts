import { PassThrough, Readable } from "node:stream";
import type {
  ContainerDriver,
  ContainerInspection,
  EngineCheck,
  EngineInfo,
  ExecOptions,
  ExecResult,
  ExecSession,
} from "../container-driver.ts";
import { resolveContainerSpec } from "../container-spec.ts";
import { PoolError } from "../pool-error.ts";
import {
  createFakeEngine,
  delay,
  type FakeContainer,
  type FakeDriverCalls,
  fakeContainer,
  matches,
} from "./fake-engine.ts";

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

/** An exec session that behaves like `cat`: stdin comes back on stdout; ending stdin ends it with exit code 0. */
function catSession(): ExecSession {
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
}

/** What the fake engine says about itself: its host as `options.host` gives it, its running containers counted. */
function fakeEngineInfo(options: FakeDriverOptions, containers: Iterable<FakeContainer>): EngineInfo {
  return {
    memoryBytes: options.host?.memoryBytes ?? 8 * 1024 ** 3,
    cpus: options.host?.cpus ?? 4,
    containersRunning: [...containers].filter((c) => c.status === "running").length,
    architecture: options.host?.architecture ?? "x86_64",
    hostname: "fake-engine",
    serverVersion: "0.0.0-fake",
    runtimes: [...new Set(["runc", options.defaultRuntime ?? "runc"])],
    defaultRuntime: "runc",
    volumePlugins: ["local"],
  };
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
  const engine = createFakeEngine();
  const { containers, calls, checkAvailable, get } = engine;
  let failCreate = options.failCreate;
  let pingDelayMs = 0;
  let inFlightCreates = 0;
  let peakInFlightCreates = 0;

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
      return engine.peakContainers;
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
        const container = fakeContainer(
          resolved,
          { ...resolved.labels, ...labels },
          { status: "created", exitCode: null },
        );
        engine.add(container);
        return { id: container.id };
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
      const container = engine.running(id);
      return options.onExec
        ? options.onExec(container, execOptions)
        : { exitCode: 0, stdout: "", stderr: "", truncated: false };
    },

    async execDuplex(id): Promise<ExecSession> {
      checkAvailable();
      engine.running(id);
      return catSession();
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

    events: (filter, onEvent) => engine.subscribe(filter, onEvent),

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
      return fakeEngineInfo(options, containers.values());
    },

    kill(id, killOptions = {}) {
      const container = get(id);
      container.status = "exited";
      container.exitCode = killOptions.exitCode ?? (killOptions.oom ? 137 : 1);
      container.oomKilled = killOptions.oom === true;
      if (killOptions.oom) {
        engine.emit(container, { type: "oom", containerId: id, exitCode: null, labels: container.labels });
      }
      engine.emit(container, {
        type: "die",
        containerId: id,
        exitCode: container.exitCode,
        labels: container.labels,
      });
    },

    addContainer(labels, addOptions = {}) {
      const running = addOptions.running !== false;
      const container = fakeContainer(
        resolveContainerSpec({ image: addOptions.image ?? "fake" }),
        { ...labels },
        running ? { status: "running", exitCode: null } : { status: "exited", exitCode: 0 },
      );
      engine.add(container);
      return container.id;
    },

    setFailCreate(next) {
      failCreate = next;
    },

    setUnavailable(next) {
      engine.unavailable = next;
    },

    setPingDelay(ms) {
      pingDelayMs = ms;
    },
  };
  return driver;
}
