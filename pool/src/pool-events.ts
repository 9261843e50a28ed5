/** Why the pool removed a container. */
export type DestroyReason =
  | "release"
  | "invalid"
  | "died"
  | "idle"
  | "abandoned"
  | "close"
  | "create-failed"
  /** A hibernated lease beyond `maxHibernated` (the oldest go first). */
  | "hibernated-budget";

/** The events of a `ContainerPool` and their payloads. */
export interface ContainerPoolEventMap {
  /** A container was created, started and set up; `durationMs` covers all three. */
  create: { containerId: string; durationMs: number };
  /** A container was removed (or its removal failed: then an `error` event follows). */
  destroy: { containerId: string; reason: DestroyReason; leaseKey?: string };
  /** A lease was handed out (`adopted` for `adopt`). */
  acquire: { containerId: string; leaseKey: string; latencyMs: number; adopted: boolean };
  /** A lease's container was stopped while idle (`reason`: idle past `hibernateAfterMs`, or room was needed). */
  hibernate: { containerId: string; leaseKey: string; reason: "idle" | "room" | "asked" };
  /** A hibernated lease's container was started and set up again; `durationMs` includes waiting for room. */
  wake: { containerId: string; leaseKey: string; durationMs: number };
  /**
   * A lease's container that stopped outside the pool's wish (`reason`) was started and set up again
   * (`ContainerLease.restart`); `durationMs` includes waiting for room.
   */
  restart: { containerId: string; leaseKey: string; durationMs: number; reason: string };
  /** A failure the pool handled itself (a failed create or adopted container's setup it will retry, a failed removal). */
  error: {
    operation: "create" | "destroy" | "reap" | "validate" | "hibernate" | "adopt";
    error: unknown;
    containerId?: string;
  };
  /** A container's main process died or was OOM-killed (from engine events). */
  exit: { containerId: string; reason: "die" | "oom"; exitCode: number | null; leaseKey?: string };
}

/** A small typed event emitter; a throwing listener never disturbs the pool. */
export interface PoolEvents<EVENTS = ContainerPoolEventMap> {
  /** Adds a listener; returns a function that removes it. */
  on<NAME extends keyof EVENTS>(name: NAME, listener: (event: EVENTS[NAME]) => void): () => void;
  off<NAME extends keyof EVENTS>(name: NAME, listener: (event: EVENTS[NAME]) => void): void;
}

/** The emitter plus its `emit`, for whoever owns the events (a pool; a binding that forwards its pool's). */
export interface PoolEventEmitter<EVENTS> extends PoolEvents<EVENTS> {
  emit<NAME extends keyof EVENTS>(name: NAME, event: EVENTS[NAME]): void;
}

/** Creates a {@link PoolEventEmitter}. */
export function createPoolEvents<EVENTS>(): PoolEventEmitter<EVENTS> {
  const listeners = new Map<keyof EVENTS, Set<(event: never) => void>>();
  return {
    on(name, listener) {
      let set = listeners.get(name);
      if (!set) {
        set = new Set();
        listeners.set(name, set);
      }
      set.add(listener as (event: never) => void);
      return () => this.off(name, listener);
    },
    off(name, listener) {
      listeners.get(name)?.delete(listener as (event: never) => void);
    },
    emit(name, event) {
      for (const listener of [...(listeners.get(name) ?? [])]) {
        try {
          (listener as (event: unknown) => void)(event);
        } catch (error) {
          process.emitWarning(`@pai/pool: a "${String(name)}" listener threw: ${String(error)}`);
        }
      }
    },
  };
}
