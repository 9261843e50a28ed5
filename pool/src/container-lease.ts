import type { PoolContainer, RemovalResult } from "./pool-container.ts";

/**
 * The pool layer's lease (single engine): one container of a `ContainerPool`, from `acquire` or `adopt`.
 *
 * A container handed out by the pool. It is never reused: `release()` removes it. A lease starts in use; once
 * marked `idle()` it may be hibernated (stopped, its files kept) and `wake()` starts it again.
 */
export interface ContainerLease<STATE = undefined> {
  readonly containerId: string;
  readonly leaseKey: string;
  /**
   * What `setup` returned for this container (`undefined` without `setup`); a wake sets it up again, so read it
   * after `wake()`. `undefined` while an adopted container is still hibernated.
   */
  readonly state: STATE;
  /** True while the container is stopped (hibernated). */
  readonly hibernated: boolean;
  /**
   * Marks the lease in use (never hibernated until `idle()`) and makes sure its container runs: a hibernated
   * one waits for room within `max` (hibernating the least recently used idle lease to make it), is started
   * and set up again (`setup` with `adopted: true`). Resolves `true` when it had to wake it. Files are as they
   * were; processes started before it hibernated are gone.
   * @throws PoolError `NOT_FOUND` when the pool removed it while hibernated (`maxHibernated`), `POOL_EXHAUSTED`
   * when no room came within `acquireTimeoutMs`.
   */
  wake(options?: { signal?: AbortSignal }): Promise<boolean>;
  /** Not in use now: hibernated once idle for `hibernateAfterMs`, or at once when room is needed. */
  idle(): void;
  /**
   * Why the container stopped although the pool did not stop it (its main process killed, `docker kill` or
   * `docker stop` from outside, an engine restart), or `undefined` while it runs or is hibernated. Known from the
   * engine's `die` event, or from the health check (the engine is then asked): a healthy container costs no
   * round trip. A stopped container stays stopped until {@link ContainerLease.restart}.
   * @throws PoolError `NOT_FOUND` when the container was removed from outside.
   */
  stopped(options?: { signal?: AbortSignal }): Promise<string | undefined>;
  /**
   * Starts a container that stopped outside the pool's wish again, the way a wake starts a hibernated one (in use,
   * files as they were, processes gone; `setup` with `adopted: true`): a `restart` event.
   * @throws PoolError `NOT_FOUND` when it was removed, `POOL_EXHAUSTED` when no room came within
   * `acquireTimeoutMs`, or what the start or `setup` threw (the container is then left stopped).
   */
  restart(options?: { signal?: AbortSignal }): Promise<void>;
  /** Hibernates now (the lease stays; `wake()` brings it back). A no-op once hibernated. */
  hibernate(): Promise<void>;
  /** True for a lease made by `adopt`. */
  readonly adopted: boolean;
  /** How `acquire` came by the container (absent for `adopt`): for telemetry and logs. */
  readonly acquisition?: LeaseAcquisition | undefined;
  readonly acquiredAt: Date;
  /**
   * Removes the container (force, with its volumes); the pool refills in the background. Idempotent.
   * Rejects (after the pool has forgotten the container) when the engine fails to remove it.
   */
  release(): Promise<void>;
  /**
   * Forgets the container without removing it: it stays for whoever takes it over (a lease handed over to
   * another process, which `adopt`s it). `teardown` runs, and it no longer counts against `max`. It is left as
   * it is: running, or stopped when hibernated (a hibernation under way finishes first), and `adopt` then takes
   * it as a hibernated lease that its first `wake()` starts. This pool never hibernates a detached container
   * (it is no longer this pool's), and `wake()` on the detached lease rejects with `NOT_FOUND`. Idempotent;
   * after it (or `release`) the other is a no-op.
   */
  detach(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** How an `acquire` came by its container. */
export interface LeaseAcquisition {
  /** The container was started and set up before the acquire asked (a warm one); false when it waited for its create. */
  warm: boolean;
  /** From the acquire's call to the container handed out, in milliseconds. */
  waitMs: number;
  /** How long creating, starting and setting up the container took, in milliseconds. */
  createMs: number | undefined;
}

/** Description of a live {@link ContainerLease}, from `leases()`. */
export interface ContainerLeaseInfo {
  containerId: string;
  leaseKey: string;
  adopted: boolean;
  acquiredAt: Date;
  hibernated: boolean;
}

/** What a lease's methods do to its container, done by the pool's parts. Internal. */
export interface ContainerLeaseOperations<STATE> {
  /** Removes it (`release`). */
  remove(container: PoolContainer<STATE>): Promise<RemovalResult>;
  /** Lets it go without removing it (`detach`). */
  forget(container: PoolContainer<STATE>): Promise<RemovalResult>;
  wake(container: PoolContainer<STATE>, signal: AbortSignal | undefined): Promise<boolean>;
  hibernate(container: PoolContainer<STATE>): Promise<void>;
  /** Frees room for waiting acquires and wakes, now that a lease went idle. */
  makeRoom(): void;
  stopped(container: PoolContainer<STATE>, signal: AbortSignal | undefined): Promise<string | undefined>;
  restart(container: PoolContainer<STATE>, signal: AbortSignal | undefined): Promise<void>;
}

/** Leases `container` for `leaseKey`: from now on the lease alone decides when it goes. */
export function createContainerLease<STATE>(
  container: PoolContainer<STATE>,
  { leaseKey, adopted, acquisition }: { leaseKey: string; adopted: boolean; acquisition?: LeaseAcquisition },
  operations: ContainerLeaseOperations<STATE>,
): ContainerLease<STATE> {
  const acquiredAt = new Date();
  let ending: Promise<void> | undefined;
  /** `release` and `detach` end the lease once; after one of them the other is a no-op. */
  const end = (how: () => Promise<RemovalResult>) => {
    ending ??= how().then((result) => {
      if (!result.ok) throw result.error;
    });
    return ending;
  };
  const release = () => end(() => operations.remove(container));
  const lease: ContainerLease<STATE> = {
    containerId: container.id,
    leaseKey,
    get state() {
      return container.state;
    },
    get hibernated() {
      return container.hibernated;
    },
    adopted,
    acquisition,
    acquiredAt,
    release,
    detach: () => end(() => operations.forget(container)),
    wake: (wakeOptions = {}) => operations.wake(container, wakeOptions.signal),
    idle() {
      if (!container.busy) return;
      container.busy = false;
      container.lastUsedAt = Date.now();
      operations.makeRoom();
    },
    hibernate: () => operations.hibernate(container),
    stopped: (stoppedOptions = {}) => operations.stopped(container, stoppedOptions.signal),
    restart: (restartOptions = {}) => operations.restart(container, restartOptions.signal),
    [Symbol.asyncDispose]: release,
  };
  container.phase = "leased";
  container.lease = { leaseKey, adopted, acquiredAt };
  return lease;
}

/** The live leases among `containers`, for `leases()`. */
export function describeLeases<STATE>(containers: Iterable<PoolContainer<STATE>>): ContainerLeaseInfo[] {
  const result: ContainerLeaseInfo[] = [];
  for (const container of containers) {
    if (container.phase === "leased" && container.lease) {
      const { leaseKey, adopted, acquiredAt } = container.lease;
      result.push({
        containerId: container.id,
        leaseKey,
        adopted,
        acquiredAt,
        hibernated: container.hibernated,
      });
    }
  }
  return result;
}
