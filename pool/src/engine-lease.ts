import type { ContainerDriver } from "./container-driver.ts";
import type { ContainerLease } from "./container-lease.ts";
import type { EngineRecord } from "./engine-record.ts";
import { messageOf } from "./error-message.ts";
import type { MultiEnginePoolEventMap } from "./multi-engine-pool-events.ts";
import { PoolError } from "./pool-error.ts";
import type { PoolEventEmitter } from "./pool-events.ts";

/** The pool layer's lease across engines (multi-engine pool): an engine pool's `ContainerLease`, plus the engine it is on and its loss. */
export interface EngineLease<STATE = undefined> extends ContainerLease<STATE> {
  /** The engine the container runs on (record it, e.g. on the lease's `meta`, to `adopt` it after a restart). */
  readonly engineId: string;
  /** The engine's driver: container calls fail at once (`DOCKER_UNAVAILABLE`) while it is unreachable. */
  readonly driver: ContainerDriver;
  /**
   * Aborted when the lease is lost — its engine stopped answering — with a `CONTAINER_LOST` error naming the
   * engine as its reason. Lost is final: the container's files and processes cannot be counted on even if the
   * engine comes back (it is then removed). Release the lease and take a new one.
   */
  readonly lostSignal: AbortSignal;
  /**
   * After a call on the container failed with `error`: resolves with the lost error when the lease is lost, once
   * a health check of the engine has answered — one made now when `error` says the engine did not answer
   * (`DOCKER_UNAVAILABLE` in its cause chain), or one under way because another call found it so. Other failures
   * wait for nothing.
   */
  confirmLost(error: unknown): Promise<PoolError | undefined>;
}

/** What {@link createEngineLease} needs of the multi-engine pool. */
export interface EngineLeaseContext<STATE> {
  events: PoolEventEmitter<MultiEnginePoolEventMap>;
  /** A health check of the engine (see `EngineHealth.check`). */
  check(record: EngineRecord<STATE>): Promise<void>;
  /** Aborted when the pool closes: `confirmLost` then waits for nothing. */
  closeSignal: AbortSignal;
}

/** True when `error`, or an error in its cause chain, is a `DOCKER_UNAVAILABLE` pool error. */
function saysUnavailable(error: unknown): boolean {
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 8; depth++) {
    if (PoolError.hasCode(current, "DOCKER_UNAVAILABLE")) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Wraps a lease of the engine's pool as an {@link EngineLease}, kept among the engine's live leases until it is
 * released or detached. When the engine stops answering it is lost: `lost` event, `lostSignal` aborted, its
 * container counted among the engine's lost ones (removed once the engine answers again), and `wake`, `stopped`,
 * `restart` and `hibernate` reject with the lost error.
 */
export function createEngineLease<STATE>(
  record: EngineRecord<STATE>,
  lease: ContainerLease<STATE>,
  context: EngineLeaseContext<STATE>,
): EngineLease<STATE> {
  const { containerId, leaseKey } = lease;
  const lostController = new AbortController();
  let lostError: PoolError | undefined;
  record.leases.set(containerId, {
    leaseKey,
    lose(reason) {
      if (lostError) return;
      lostError = new PoolError(
        "CONTAINER_LOST",
        `Container ${containerId.slice(0, 12)} (${leaseKey}) is lost: Docker engine ${record.id} stopped answering (${messageOf(reason.cause)})`,
        { cause: reason, details: { engineId: record.id, containerId, leaseKey } },
      );
      record.lostIds.add(containerId);
      record.lostCount++;
      lostController.abort(lostError);
      context.events.emit("lost", { engineId: record.id, containerId, leaseKey, error: lostError });
    },
  });
  let ending: Promise<void> | undefined;
  const release = () => {
    ending ??= (async () => {
      record.leases.delete(containerId);
      try {
        await lease.release();
        record.lostIds.delete(containerId);
      } catch (error) {
        // A lost container is removed once its engine answers again.
        if (!lostError) throw error;
      }
    })();
    return ending;
  };
  // A lost container stays among the lost ones: removed once its engine answers, whoever took it over.
  const detach = () => {
    ending ??= (async () => {
      record.leases.delete(containerId);
      await lease.detach();
    })();
    return ending;
  };
  return {
    containerId,
    leaseKey,
    // Live: a wake sets the container up again.
    get state() {
      return lease.state;
    },
    get hibernated() {
      return lease.hibernated;
    },
    adopted: lease.adopted,
    acquisition: lease.acquisition,
    acquiredAt: lease.acquiredAt,
    engineId: record.id,
    driver: record.driver,
    lostSignal: lostController.signal,
    async confirmLost(error) {
      if (lostError || context.closeSignal.aborted) return lostError;
      if (saysUnavailable(error)) await context.check(record);
      else if (record.suspected) await record.suspected;
      return lostError;
    },
    // A lost lease does not wake: its engine stopped answering, so its files cannot be counted on.
    wake: (wakeOptions) => (lostError ? Promise.reject(lostError) : lease.wake(wakeOptions)),
    stopped: (stoppedOptions) => (lostError ? Promise.reject(lostError) : lease.stopped(stoppedOptions)),
    restart: (restartOptions) => (lostError ? Promise.reject(lostError) : lease.restart(restartOptions)),
    idle: () => lease.idle(),
    hibernate: () => (lostError ? Promise.reject(lostError) : lease.hibernate()),
    release,
    detach,
    [Symbol.asyncDispose]: release,
  };
}

/** Loses every live lease on an engine that stopped answering (see {@link createEngineLease}). */
export function loseEngineLeases(record: Pick<EngineRecord<unknown>, "leases">, reason: PoolError): void {
  for (const lease of [...record.leases.values()]) lease.lose(reason);
}

/** Removes the containers of lost leases (the engine answers again); a failure leaves them for next time. */
export async function removeLostContainers<STATE>(
  record: EngineRecord<STATE>,
  context: Omit<EngineLeaseContext<STATE>, "check">,
): Promise<void> {
  for (const id of [...record.lostIds]) {
    try {
      await record.raw.remove(id, { signal: context.closeSignal });
      record.lostIds.delete(id);
    } catch (error) {
      if (!context.closeSignal.aborted) {
        context.events.emit("error", { operation: "destroy", error, containerId: id, engineId: record.id });
      }
      return;
    }
  }
}
