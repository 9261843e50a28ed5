import type { Duplex } from "node:stream";
import type { ConnectionAudience } from "@pai/container-agent";
import type {
  ProvisionedResource,
  ResourceAcquisition,
  ResourceCheckpoints,
  ResourceHibernation,
  ResourceRestart,
} from "@pai/core";
import { type EngineLease, type MultiEnginePool, PoolError, type PoolErrorCode } from "@pai/pool";
import { type BindScope, bindFacade, type FacadeCalls } from "./bind-facade.ts";

/** What a pooled resource's lease records: the pool, the image, and the engine the container is on (to reattach it there). */
export type PooledResourceMeta = { poolId: string; image: string; engine: string };

/** What a pooled binding hands out: `ProvisionedResource` with everything a container lease offers. */
export interface PooledResource<FACADE> extends ProvisionedResource<FACADE> {
  /**
   * The facade of the running container (calls fail with `CONTAINER_LOST` once its lease is lost).
   * @throws PoolError `CONTAINER_FAILED` while hibernated (wake first), `CONTAINER_LOST` once it is lost.
   */
  readonly facade: FACADE;
  /** The container id (a new one's once a restart replaced the container). */
  readonly resourceId: string;
  readonly meta: PooledResourceMeta;
  /** Removes the container (running or hibernated). */
  release(): Promise<void>;
  /**
   * Lets go of the container without removing it (a lease handed over to another process, which reattaches it):
   * left running, or stopped when hibernated (the other process wakes it on first use); see `ContainerLease.detach`.
   */
  detach(): Promise<void>;
  /** The facade as one run sees it: see `bindFacade`. */
  bind(scope: BindScope): FACADE;
  /**
   * `wake` restarts a container that stopped outside PAI's wish (through the wake path: files kept, processes gone)
   * or, when it cannot be started again, replaces it by a new container that inherits its `carryOver` folders (the
   * resource's `resourceId` then names the new one), at most `restartLimit` times (then `CONTAINER_LOST`).
   */
  readonly hibernation: ResourceHibernation;
}

/**
 * A new connection to `port` on the loopback of a lease's running container (see `ProvisionedResource.openPort`).
 */
export type PortOpener<STATE> = (
  lease: EngineLease<STATE>,
  port: number,
  signal: AbortSignal,
) => Promise<Duplex>;

/** Checkpoints of a lease's running container's state (see `ProvisionedResource.checkpoints`). */
export type CheckpointsOf<STATE> = (lease: EngineLease<STATE>) => ResourceCheckpoints;

/** The facade over a lease's container, made again after each wake; `audience` hears its connections. */
export type FacadeOf<STATE, FACADE> = (
  lease: EngineLease<STATE>,
  pool: { image: string; poolId: string },
) => { facade: FACADE; audience?: ConnectionAudience | undefined };

/** Options of {@link createPooledResource}. */
export interface PooledResourceOptions<STATE, FACADE> {
  /** The capability's name, for messages. */
  name: string;
  /** The lease the resource starts on. */
  lease: EngineLease<STATE>;
  /** Its pool: it gives a container that cannot be started again a successor. */
  pool: MultiEnginePool<STATE>;
  names: { image: string; poolId: string };
  calls: FacadeCalls<FACADE>;
  facadeOf: FacadeOf<STATE, FACADE>;
  /** Folders a successor inherits; without them a container that cannot be started again is not replaced. */
  carryOver?: readonly string[] | undefined;
  /** The successor is stopped while `carryOver` is copied in (see `CarryOptions.carryStopped`). */
  carryOverStopped?: boolean | undefined;
  restartLimit?: { restarts?: number; withinMs?: number } | undefined;
  /** Connections to the container's ports; without it the resource has no `openPort`. */
  openPort?: PortOpener<STATE> | undefined;
  /** Checkpoints of the container's state; without it the resource has no `checkpoints`. */
  checkpoints?: CheckpointsOf<STATE> | undefined;
}

/** Failures of a restart that a successor would not fix. */
const unrecoverable: readonly PoolErrorCode[] = [
  "NOT_FOUND",
  "POOL_EXHAUSTED",
  "POOL_CLOSED",
  "CONTAINER_LOST",
  "DOCKER_UNAVAILABLE",
];

function hibernatedError(name: string, lease: EngineLease<unknown>): PoolError {
  return new PoolError("CONTAINER_FAILED", `${name} ${lease.containerId} is hibernated: wake it first`, {
    details: { containerId: lease.containerId, engineId: lease.engineId },
  });
}

function restartLimitError(
  name: string,
  lease: EngineLease<unknown>,
  stopped: string,
  restarts: readonly number[],
  windowMs: number,
): PoolError {
  return new PoolError(
    "CONTAINER_LOST",
    `${name} ${lease.containerId.slice(0, 12)} stopped again (${stopped}) after ${restarts.length} restarts within ${Math.round(windowMs / 1000)} s: it is not started again before ${new Date(restarts[0]! + windowMs).toISOString()}`,
    {
      details: {
        containerId: lease.containerId,
        engineId: lease.engineId,
        reason: stopped,
        restarts: restarts.length,
        withinMs: windowMs,
      },
    },
  );
}

/**
 * The resource over a lease: its facade is made from the lease's current state, again after each wake, and seen
 * through `bindFacade` (so that calls on a lost lease fail with `CONTAINER_LOST`); `meta.engine` records the lease's
 * engine. A container that stopped outside PAI's wish is started again on the next wake (within `restartLimit`), or
 * replaced by a successor that inherits its `carryOver` folders: the resource then stands for the successor's lease.
 */
export function createPooledResource<STATE, FACADE extends object>(
  options: PooledResourceOptions<STATE, FACADE>,
): PooledResource<FACADE> {
  const { name, names, calls, carryOver } = options;
  const restartsAllowed = options.restartLimit?.restarts ?? 3;
  const restartWindowMs = options.restartLimit?.withinMs ?? 60_000;
  let lease = options.lease;
  /** When the container was started again after stopping on its own, within the last `restartWindowMs`. */
  let restarts: number[] = [];
  /** The facade over the lease's current state, and the view of it that reports a lost lease (`facade`). */
  let made:
    | {
        lease: EngineLease<STATE>;
        state: STATE;
        facade: FACADE;
        guarded: FACADE;
        audience: ConnectionAudience | undefined;
      }
    | undefined;

  function current() {
    if (lease.hibernated) {
      // A running lost lease still hands out its facade, whose calls reject; a hibernated one has none.
      if (lease.lostSignal.aborted) throw lease.lostSignal.reason;
      throw hibernatedError(name, lease);
    }
    if (made?.lease !== lease || made.state !== lease.state) {
      const { facade, audience } = options.facadeOf(lease, names);
      const guarded = bindFacade(facade, { calls, lost: lease });
      made = { lease, state: lease.state, facade, guarded, audience };
    }
    return made;
  }

  /** Starts the stopped container again (or gives it a successor), within the restart limit. */
  async function restart(stopped: string, signal: AbortSignal): Promise<ResourceRestart> {
    const now = Date.now();
    restarts = restarts.filter((at) => now - at < restartWindowMs);
    if (restarts.length >= restartsAllowed) {
      throw restartLimitError(name, lease, stopped, restarts, restartWindowMs);
    }
    restarts.push(now);
    try {
      await lease.restart({ signal });
      return { status: "restarted", reason: stopped };
    } catch (error) {
      // Only a container that will not start (or set up) again is replaced: not one that is gone or waits for room.
      if (
        signal.aborted ||
        !carryOver?.length ||
        unrecoverable.some((code) => PoolError.hasCode(error, code))
      )
        throw error;
      const carryStopped = options.carryOverStopped === true;
      lease = await options.pool.succeed(lease, { carry: carryOver, carryStopped, signal });
      const why = error instanceof Error ? error.message : String(error);
      return {
        status: "restarted",
        reason: `${stopped}; it could not be started again (${why}), so a new container took over its ${carryOver.join(", ")}`,
      };
    }
  }

  const { openPort, checkpoints } = options;
  return {
    ...(checkpoints
      ? {
          // The runtime wakes the resource first: a hibernated or lost one fails here, as its facade would.
          checkpoints: {
            take: async (takeOptions) => {
              current();
              return checkpoints(lease).take(takeOptions);
            },
            restore: async (manifestDigest, restoreOptions) => {
              current();
              return checkpoints(lease).restore(manifestDigest, restoreOptions);
            },
            stopProcesses: async (stopOptions) => {
              current();
              return (await checkpoints(lease).stopProcesses?.(stopOptions)) ?? [];
            },
          } satisfies ResourceCheckpoints,
        }
      : {}),
    ...(openPort
      ? {
          openPort(port: number, signal: AbortSignal): Promise<Duplex> {
            // The runtime wakes the resource first: a hibernated or lost one fails here, as its facade would.
            try {
              current();
            } catch (error) {
              return Promise.reject(error);
            }
            return openPort(lease, port, signal);
          },
        }
      : {}),
    get facade() {
      return current().guarded;
    },
    get resourceId() {
      return lease.containerId;
    },
    get meta() {
      return { ...names, engine: lease.engineId };
    },
    get acquisition() {
      const { acquisition } = lease;
      if (!acquisition) return undefined;
      return {
        source: acquisition.warm ? "warm" : "cold",
        engine: lease.engineId,
        waitMs: acquisition.waitMs,
        ...(acquisition.createMs !== undefined ? { createMs: acquisition.createMs } : {}),
      } satisfies ResourceAcquisition;
    },
    release: () => lease.release(),
    detach: () => lease.detach(),
    bind({ signal, report, previews }) {
      const { facade, audience, lease: watched } = current();
      return bindFacade(facade, { calls, lost: watched, signal, report, audience, previews });
    },
    hibernation: {
      async wake(signal) {
        try {
          const stopped = await lease.stopped({ signal });
          if (stopped !== undefined) return await restart(stopped, signal);
          return (await lease.wake({ signal })) ? "woken" : "running";
        } catch (error) {
          if (PoolError.hasCode(error, "NOT_FOUND")) return "gone";
          throw error;
        }
      },
      idle: () => lease.idle(),
    },
  };
}
