import type { PoolContainer, RemovalResult } from "./pool-container.ts";
import type { PoolCore } from "./pool-core.ts";
import type { DestroyReason } from "./pool-events.ts";

/** How the single-engine pool ends its containers: removed from the engine, or let go of running. Internal. */
export interface ContainerRemoval<STATE> {
  /**
   * Tears down and removes a container the pool holds, once (a second call returns the first's promise); frees its
   * room and emits `destroy` (with an `error` event first when the engine fails to remove it).
   */
  remove(container: PoolContainer<STATE>, reason: DestroyReason): Promise<RemovalResult>;
  /** Lets go of a leased container without removing it (see `ContainerLease.detach`). */
  forget(container: PoolContainer<STATE>): Promise<RemovalResult>;
  /** Runs the `teardown` hook; its failure is reported, never thrown. */
  teardown(containerId: string, state: STATE): Promise<void>;
  /** Removes a container the pool holds no record of (a half-made one, a leftover at close); failures are reported. */
  removeUnowned(containerId: string): Promise<void>;
  /** The removals and forgettings under way. */
  inFlight(): Promise<RemovalResult>[];
  /** Failed removals since the pool was made. */
  readonly destroyFailures: number;
}

/** Makes the removal part of a single-engine pool. */
export function createContainerRemoval<STATE>(core: PoolCore<STATE>): ContainerRemoval<STATE> {
  const { driver, events, capacity, containers, knownIds } = core;
  const removals = new Set<Promise<RemovalResult>>();
  let destroyFailures = 0;

  function reportDestroyFailure(containerId: string, error: unknown): void {
    destroyFailures++;
    events.emit("error", { operation: "destroy", error, containerId });
  }

  /** Records `ending` as the container's removal, tracked until it settles. */
  function track(container: PoolContainer<STATE>, ending: Promise<RemovalResult>): Promise<RemovalResult> {
    container.removal = ending;
    removals.add(ending);
    void ending.finally(() => removals.delete(ending));
    return ending;
  }

  /** Forgets the container: no longer held, its room free. */
  function release(container: PoolContainer<STATE>): void {
    containers.delete(container.id);
    if (container.permit) capacity.release();
    container.permit = false;
  }

  async function teardown(containerId: string, state: STATE): Promise<void> {
    if (!core.options.teardown) return;
    try {
      await core.options.teardown({ containerId, driver, state });
    } catch (error) {
      events.emit("error", { operation: "destroy", error, containerId });
    }
  }

  function remove(container: PoolContainer<STATE>, reason: DestroyReason): Promise<RemovalResult> {
    if (container.removal) return container.removal;
    container.phase = "removing";
    const leaseKey = container.lease?.leaseKey;
    return track(
      container,
      (async () => {
        try {
          if (!container.tornDown) await teardown(container.id, container.state);
          await driver.remove(container.id);
          knownIds.delete(container.id);
          return { ok: true };
        } catch (error) {
          reportDestroyFailure(container.id, error);
          return { ok: false, error };
        } finally {
          release(container);
          events.emit("destroy", {
            containerId: container.id,
            reason,
            ...(leaseKey !== undefined ? { leaseKey } : {}),
          });
        }
      })(),
    );
  }

  function forget(container: PoolContainer<STATE>): Promise<RemovalResult> {
    if (container.removal) return container.removal;
    container.phase = "removing";
    return track(
      container,
      (async () => {
        try {
          // A hibernation under way finishes first: the container is let go of stopped, as a hibernated lease.
          await container.transition?.catch(() => undefined);
          if (!container.tornDown) await teardown(container.id, container.state);
          return { ok: true };
        } finally {
          knownIds.delete(container.id);
          core.letGo.add(container.id);
          release(container);
        }
      })(),
    );
  }

  async function removeUnowned(containerId: string): Promise<void> {
    try {
      await driver.remove(containerId);
      knownIds.delete(containerId);
    } catch (error) {
      reportDestroyFailure(containerId, error);
    }
  }

  return {
    remove,
    forget,
    teardown,
    removeUnowned,
    inFlight: () => [...removals],
    get destroyFailures() {
      return destroyFailures;
    },
  };
}
