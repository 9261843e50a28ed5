import { randomBytes } from "node:crypto";
import type { ContainerEvent, LabelFilter } from "../container-driver.ts";
import type { ResolvedContainerSpec } from "../container-spec.ts";
import { PoolError } from "../pool-error.ts";

/** A container of the `FakeDriver`. */
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

/** Call counters of a `FakeDriver`. */
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

/** What a fake engine holds, shared by the fake driver's calls and the controls tests turn. */
export interface FakeEngine {
  /** Containers that exist (created and not removed). */
  readonly containers: Map<string, FakeContainer>;
  readonly calls: FakeDriverCalls;
  /** Most containers that existed at once. */
  readonly peakContainers: number;
  /** While set, every call rejects with `DOCKER_UNAVAILABLE` (the engine went away). */
  unavailable: boolean;
  /** @throws PoolError `DOCKER_UNAVAILABLE` while the engine is unavailable. */
  checkAvailable(): void;
  /** @throws PoolError `NOT_FOUND` when there is no such container. */
  get(id: string): FakeContainer;
  /** @throws PoolError `NOT_FOUND` when there is no such container, `CONTAINER_FAILED` when it is not running. */
  running(id: string): FakeContainer;
  add(container: FakeContainer): void;
  /** Hands `event` to the subscribers whose filter matches the container's labels. */
  emit(container: FakeContainer, event: ContainerEvent): void;
  /** Adds a subscriber of `die`/`oom` events; returns the unsubscribe function. */
  subscribe(filter: LabelFilter, onEvent: (event: ContainerEvent) => void): () => void;
}

/** Resolves after `ms` milliseconds, or rejects with the signal's reason when it aborts first. */
export function delay(ms: number, signal?: AbortSignal): Promise<void> {
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

/** True when every label of `filter` is on the container. */
export function matches(labels: Record<string, string>, filter: LabelFilter): boolean {
  return Object.entries(filter.labels).every(([key, value]) => labels[key] === value);
}

/** A fresh container record: no archives in it, nothing written on its disk. */
export function fakeContainer(
  spec: ResolvedContainerSpec,
  labels: Record<string, string>,
  state: Pick<FakeContainer, "status" | "exitCode">,
): FakeContainer {
  return {
    id: randomBytes(32).toString("hex"),
    spec,
    labels,
    ...state,
    oomKilled: false,
    archives: new Map(),
    diskUsedBytes: 0,
  };
}

/** An empty {@link FakeEngine} that answers. */
export function createFakeEngine(): FakeEngine {
  const containers = new Map<string, FakeContainer>();
  const subscribers = new Set<{ filter: LabelFilter; onEvent: (event: ContainerEvent) => void }>();
  let peakContainers = 0;
  const engine: FakeEngine = {
    containers,
    calls: {
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
    },
    get peakContainers() {
      return peakContainers;
    },
    unavailable: false,
    checkAvailable() {
      if (engine.unavailable) throw new PoolError("DOCKER_UNAVAILABLE", "fake engine unavailable");
    },
    get(id) {
      const container = containers.get(id);
      if (!container)
        throw new PoolError("NOT_FOUND", `No such container: ${id}`, { details: { containerId: id } });
      return container;
    },
    running(id) {
      const container = engine.get(id);
      if (container.status !== "running") {
        throw new PoolError("CONTAINER_FAILED", `Container ${id} is not running`);
      }
      return container;
    },
    add(container) {
      containers.set(container.id, container);
      peakContainers = Math.max(peakContainers, containers.size);
    },
    emit(container, event) {
      for (const subscriber of subscribers) {
        if (matches(container.labels, subscriber.filter)) subscriber.onEvent(event);
      }
    },
    subscribe(filter, onEvent) {
      const subscriber = { filter, onEvent };
      subscribers.add(subscriber);
      return () => {
        subscribers.delete(subscriber);
      };
    },
  };
  return engine;
}
