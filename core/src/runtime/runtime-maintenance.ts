import type { CapabilityManager } from "../capabilities/capability-manager.ts";
import type { ThreadCheckpoints } from "../checkpoints/thread-checkpoints.ts";
import type { OwnerRegistry } from "../ownership/owner-registry.ts";
import type { ThreadStore } from "../threads/thread-store.ts";
import { freeGoneOwnersThreads, interruptDeadRuns } from "./interrupt-dead-runs.ts";
import type { ThreadRunLeases } from "./thread-run-leases.ts";

/** How long a finished run's stored stream stays for followers still reading it. */
const RUN_CHUNKS_KEPT_MS = 60_000;

/** How often the runtime's background work runs. */
export interface MaintenanceIntervals {
  /** Heartbeat, and handing leases over when asked. @default 5000 */
  heartbeatIntervalMs?: number;
  /**
   * Interrupting dead owners' runs, taking over or freeing their leases and reaping their resources. With the
   * owner TTL it bounds how long a dead process's containers outlive it. @default 15000
   */
  reconcileIntervalMs?: number;
  /** Releasing `thread`/`user` leases idle past their TTL. @default 30000 */
  sweepIdleIntervalMs?: number;
}

/** The runtime's background work, on one timer. */
export interface RuntimeMaintenance {
  /** Resolves once the first pass (heartbeat, dead owners' runs) is done. */
  readonly started: Promise<void>;
  /** Runs a full pass now (after the one under way, if any). */
  runNow(): Promise<void>;
  /** Stops the timer and waits for the pass under way. */
  close(): Promise<void>;
}

/**
 * Starts the runtime's maintenance. Every heartbeat interval it records this process as alive and renews the leases
 * of the threads it runs, on its own: a beat never waits behind the other work, which may take long (reattaching
 * and reaping containers), so that work never makes a live process look dead. Every heartbeat it also follows its
 * capability leases in the store (handovers); every reconcile interval it interrupts dead owners' runs, frees the
 * threads of those whose process is known gone, takes over or frees their leases and has the bindings reap, then
 * forgets the dead owners every binding has dealt with, and deletes the stored streams of runs that ended a minute
 * ago; every idle interval it releases idle leases; every collect interval of `checkpoints` it removes the
 * checkpoint blobs nothing references. A pass never overlaps the previous one; errors go to `onError`
 * and the next pass tries again. The first pass runs at once, so a process that starts after another on its
 * machine died has that one's runs ended and its threads free once `started` resolves.
 */
export function createRuntimeMaintenance(options: {
  store: ThreadStore;
  owners: OwnerRegistry;
  threadLeases: ThreadRunLeases;
  capabilities: CapabilityManager;
  /** The runtime's checkpoints, whose unreferenced blobs are collected every `collectIntervalMs`. */
  checkpoints?: Pick<ThreadCheckpoints, "collect" | "collectIntervalMs"> | undefined;
  intervals?: MaintenanceIntervals;
  onError: (error: unknown) => void;
}): RuntimeMaintenance {
  const { store, owners, threadLeases, capabilities, checkpoints, onError } = options;
  const heartbeatIntervalMs = options.intervals?.heartbeatIntervalMs ?? 5000;
  const reconcileIntervalMs = options.intervals?.reconcileIntervalMs ?? 15_000;
  const sweepIdleIntervalMs = options.intervals?.sweepIdleIntervalMs ?? 30_000;
  let lastReconcile = Number.NEGATIVE_INFINITY;
  let lastSweep = Date.now();
  let lastCollect = Date.now();
  /** Aborted by `close`: a collection under way stops. */
  const closing = new AbortController();
  let running: Promise<void> = Promise.resolve();
  let beating: Promise<void> | undefined;
  let closed = false;

  /** One step of a pass; a failing step does not stop the others. */
  const step = (work: () => Promise<unknown>) => work().catch(onError);

  /**
   * Says this process is alive and keeps its threads, unless a beat is under way. On its own beat: a pass slowed
   * down by a busy engine (reaping lists containers) must never make a live process look dead to the others, who
   * would free what it holds.
   */
  const beat = (): Promise<void> => {
    if (beating) return beating;
    const current = (async () => {
      await step(() => owners.heartbeat());
      await step(() => threadLeases.renew());
    })().finally(() => {
      beating = undefined;
    });
    beating = current;
    return current;
  };

  /**
   * One pass; `force` runs every step now. The first pass (`first`) leaves the collection of checkpoint blobs to
   * the timer: it walks the whole blob store, and the start waits for the first pass.
   */
  async function pass(force: boolean, first = false): Promise<void> {
    const now = Date.now();
    const live = await owners.liveOwners().catch((error: unknown) => {
      onError(error);
      return undefined;
    });
    if (!live) return;
    await step(() => capabilities.syncLeases(live));
    if (force || now - lastReconcile >= reconcileIntervalMs) {
      lastReconcile = now;
      await step(() => interruptDeadRuns(store, { live, self: owners }));
      // In the same pass as their runs are interrupted, so a thread whose run was ended takes a new one at once
      // (a silent owner's thread lease, renewed just after its heartbeat, would lapse only moments later).
      await step(async () => freeGoneOwnersThreads(store, await owners.deadOwners()));
      await step(async () => {
        const dead = await owners.deadOwners();
        if (await capabilities.reconcile(live, dead)) await owners.forget(dead);
      });
      await step(() => store.pruneRunChunks(now - RUN_CHUNKS_KEPT_MS));
    }
    if (force || now - lastSweep >= sweepIdleIntervalMs) {
      lastSweep = now;
      await step(() => capabilities.sweepIdle());
    }
    if (checkpoints && !first && (force || now - lastCollect >= checkpoints.collectIntervalMs)) {
      lastCollect = now;
      await step(() => checkpoints.collect(closing.signal));
    }
  }

  const enqueue = (force: boolean, first = false) => {
    running = running.then(() => (closed ? undefined : pass(force, first)));
    return running;
  };

  const started = beat().then(() => enqueue(true, true));
  let ticking = false;
  const timer = setInterval(() => {
    if (closed) return;
    void beat();
    // A tick never queues a pass behind one still running: it is skipped.
    if (ticking) return;
    ticking = true;
    void enqueue(false).finally(() => {
      ticking = false;
    });
  }, heartbeatIntervalMs);
  timer.unref();

  return {
    started,
    runNow: () => beat().then(() => enqueue(true)),
    async close() {
      closed = true;
      clearInterval(timer);
      closing.abort();
      await Promise.all([running, beating]);
    },
  };
}
