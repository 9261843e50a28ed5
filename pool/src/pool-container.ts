/** How a removal (or a detach) of a container ended: `error` is what the engine said when it failed. */
export interface RemovalResult {
  ok: boolean;
  error?: unknown;
}

/**
 * A container the single-engine pool holds (being set up, warm, leased or being removed) and what the pool knows
 * of it. Internal: a lease shows its owner a {@link ContainerLease} over it.
 */
export interface PoolContainer<STATE> {
  id: string;
  state: STATE;
  phase: "idle" | "leased" | "removing";
  /**
   * The engine reported its death outside the pool's wish: an idle container is flushed out of the warm queue; a leased one
   * is looked at on its next use (see `ContainerLease.stopped`).
   */
  dead: boolean;
  /** Why a leased container stopped outside the pool's wish, once known; cleared when it is started again. */
  stopReason?: string;
  /** `teardown` already ran (the pool closed with `keepLeased`, or it hibernated); a later release only removes. */
  tornDown?: boolean;
  /** Holds one of `capacity`'s permits (false while hibernated). */
  permit: boolean;
  /** Stopped while its lease was idle. */
  hibernated: boolean;
  /** A hibernate or wake in progress. */
  transition?: Promise<unknown>;
  hibernatedAt?: number;
  /** In use (not `idle()`): never hibernated. */
  busy: boolean;
  lastUsedAt: number;
  /** Set once the container is leased. */
  lease?: { leaseKey: string; adopted: boolean; acquiredAt: Date };
  removal?: Promise<RemovalResult>;
  /** When it was ready (created, started, set up; `performance.now()`) and how long that took, when this pool made it. */
  made?: { readyAt: number; createMs: number };
  /** What `containerEnv` gave it, when this pool created it. */
  createEnv?: Readonly<Record<string, string>>;
}

/** Waits until no hibernate, wake or restart of the container is under way (whatever their outcome). */
export async function settleTransitions(container: PoolContainer<unknown>): Promise<void> {
  while (container.transition) await container.transition.catch(() => undefined);
}

/**
 * Runs `work` as the container's transition (a hibernate, wake or restart): others wait for it with
 * {@link settleTransitions} before they look at the container.
 */
export async function runTransition<T>(
  container: PoolContainer<unknown>,
  work: () => Promise<T>,
): Promise<T> {
  const transition = work();
  container.transition = transition;
  try {
    return await transition;
  } finally {
    if (container.transition === transition) container.transition = undefined;
  }
}
