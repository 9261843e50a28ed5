import { type Context, ROOT_CONTEXT } from "@opentelemetry/api";
import { PaiError } from "../errors/pai-error.ts";
import { type PaiTelemetryFlags, telemetryFlags, withTelemetryFlags } from "../telemetry/pai-telemetry.ts";
import type { LeaseRecord, ThreadStore } from "../threads/thread-store.ts";
import { traceTakeover } from "./acquire-span.ts";
import type { CapabilityBinding, ProvisionedResource } from "./capability-binding.ts";
import { type HeldLease, type LeaseTable, leaseId, outlivesRuns } from "./lease-table.ts";
import { OrphanResources } from "./orphan-resources.ts";
import { releaseLease } from "./release-lease.ts";

/** How long a reattach after a restart or a takeover may take. */
const REATTACH_TIMEOUT_MS = 30_000;

/** What a {@link LeaseReconciler} reads, records and holds leases in. */
export interface LeaseReconcilerOptions {
  store: ThreadStore;
  /** This process's owner id. */
  ownerId: string;
  leases: LeaseTable;
  /** The runtime's telemetry flags, for the spans of takeovers (which no run asks for). @default spans on */
  telemetry?: PaiTelemetryFlags | undefined;
  /** Told why a recorded resource that is there could not be reattached (the lease then gets a new one). */
  onError?: ((error: unknown) => void) | undefined;
}

/**
 * Makes the leases recorded in the store that no live process holds this process's, and has the bindings reap
 * what dead owners left: a dead owner's fresh `thread`/`user` lease is claimed (one process wins) and reattached,
 * so the user's files survive; its other leases, and those that fail to reattach, are deleted and their resources
 * removed at the binding's next reap (orphans), whatever owner they are labelled with.
 */
export class LeaseReconciler {
  readonly #store: ThreadStore;
  readonly #ownerId: string;
  readonly #leases: LeaseTable;
  readonly #onError: (error: unknown) => void;
  /** The parent of a takeover's span: no run's, with the runtime's telemetry flags. */
  readonly #traceParent: Context;
  readonly #orphans = new OrphanResources();
  /** Leases a reconcile is taking over from a dead owner, by lease id: a run needing one waits for it. */
  readonly #takeovers = new Map<string, Promise<unknown>>();

  constructor(options: LeaseReconcilerOptions) {
    this.#store = options.store;
    this.#ownerId = options.ownerId;
    this.#leases = options.leases;
    this.#onError = options.onError ?? (() => {});
    this.#traceParent = withTelemetryFlags(options.telemetry ?? telemetryFlags(undefined), ROOT_CONTEXT);
  }

  /**
   * Waits while a reconcile takes the lease `id` over (its resource is then this process's lease), or rejects
   * with `signal`'s reason.
   */
  async takeoversSettled(id: string, signal: AbortSignal): Promise<void> {
    for (let takeover = this.#takeovers.get(id); takeover; takeover = this.#takeovers.get(id))
      await settledOrAborted(takeover, signal);
  }

  /**
   * Takes over or frees the leases of owners that are not `live`, then has the binding reap what no live
   * lease names of the `dead` owners (and of the owners of leases found dead), and the orphans.
   */
  async reconcile(
    binding: CapabilityBinding,
    live: ReadonlySet<string>,
    deadOwners: ReadonlySet<string>,
  ): Promise<void> {
    const keep = new Set<string>();
    const dead = new Set(deadOwners);
    for (const record of await this.#store.listLeases({ capability: binding.capability })) {
      const id = leaseId(record.capability, record.lifetime, record.key);
      // A lease this process holds, is obtaining or is taking over right now.
      if (this.#leases.has(id) || this.#takeovers.has(id)) {
        keep.add(record.resourceId);
        continue;
      }
      const mine = record.ownerId === this.#ownerId;
      if (!mine && record.ownerId !== undefined && live.has(record.ownerId)) {
        keep.add(record.resourceId);
        continue;
      }
      if (!mine && record.ownerId !== undefined) dead.add(record.ownerId);
      const takeover = this.#takeOver(binding, record, id, mine);
      this.#takeovers.set(id, takeover);
      try {
        const kept = await takeover;
        if (kept !== undefined) keep.add(kept);
      } finally {
        this.#takeovers.delete(id);
      }
    }
    const orphans = this.#orphans.of(binding.capability);
    await binding.reapUnowned?.({
      keepResourceIds: [...keep],
      deadOwnerIds: dead,
      ...(orphans.length > 0 ? { orphanResourceIds: orphans } : {}),
    });
    this.#orphans.forget(binding.capability, orphans);
  }

  /**
   * Reattaches the resource of a lease this process now owns. A stale lease, or one whose resource is gone or
   * failed to reattach (why: told to `onError`), is deleted (its resource, if any, is removed at the binding's
   * next reconcile) and `undefined` returned.
   */
  async reattach(
    binding: CapabilityBinding,
    record: LeaseRecord,
    signal: AbortSignal,
  ): Promise<ProvisionedResource | undefined> {
    const fresh = Date.now() - record.lastUsedAt < this.#leases.idleTtlOf(record.capability);
    const reattached = fresh
      ? await binding
          .reattach?.(record, AbortSignal.any([signal, AbortSignal.timeout(REATTACH_TIMEOUT_MS)]))
          .catch((error: unknown) => {
            this.#onError(reattachError(record, error));
            return undefined;
          })
      : undefined;
    if (!reattached) {
      await this.#store.deleteLease(record.capability, record.lifetime, record.key);
      this.#orphans.add(binding.capability, record.resourceId);
      return undefined;
    }
    if (reattached.resourceId !== record.resourceId) {
      await this.#store.putLease({ ...record, resourceId: reattached.resourceId, ownerId: this.#ownerId });
    }
    return reattached;
  }

  /**
   * At close, after this process released the leases it holds: a record still naming this process is one another
   * process handed over to it after its run stopped waiting (see `LeaseHandover.takeRecorded`), which no lease
   * here holds. It is this process's to free: its record is deleted and its resource becomes an orphan.
   */
  async dropUnheldAtClose(binding: CapabilityBinding): Promise<void> {
    for (const record of await this.#store.listLeases({ capability: binding.capability })) {
      if (record.ownerId !== this.#ownerId) continue;
      await this.#store.deleteLease(record.capability, record.lifetime, record.key);
      this.#orphans.add(binding.capability, record.resourceId);
    }
  }

  /** Removes a binding's pending orphans at close, keeping every resource a lease in the store names (any owner). */
  async reapOrphansAtClose(binding: CapabilityBinding): Promise<void> {
    const orphans = this.#orphans.of(binding.capability);
    if (orphans.length === 0 || !binding.reapUnowned) return;
    const leases = await this.#store.listLeases({ capability: binding.capability });
    await binding.reapUnowned({
      keepResourceIds: leases.map((record) => record.resourceId),
      deadOwnerIds: new Set(),
      orphanResourceIds: orphans,
    });
    this.#orphans.forget(binding.capability, orphans);
  }

  /**
   * Makes a lease in the store that no live process holds this process's: claims it (unless `mine`), then
   * reattaches a `thread`/`user` lease's resource and holds it; other leases, and those that fail to reattach,
   * are deleted and their resources left to the reaper.
   * @returns the resource id to keep: the reattached one, or the record's when another process claimed it first.
   */
  async #takeOver(
    binding: CapabilityBinding,
    record: LeaseRecord,
    id: string,
    mine: boolean,
  ): Promise<string | undefined> {
    if (!mine) {
      const claimed = await this.#store.claimLease(record.capability, record.lifetime, record.key, {
        from: record.ownerId,
        to: this.#ownerId,
      });
      if (!claimed) return record.resourceId; // another live process took it meanwhile
    }
    if (!outlivesRuns(record.lifetime)) {
      await this.#store.deleteLease(record.capability, record.lifetime, record.key);
      this.#orphans.add(binding.capability, record.resourceId);
      return undefined;
    }
    const startedAt = Date.now();
    const reattached = await this.reattach(binding, record, AbortSignal.timeout(REATTACH_TIMEOUT_MS));
    if (!reattached) return undefined;
    const lease: HeldLease = {
      capability: record.capability,
      lifetime: record.lifetime,
      key: record.key,
      resource: Promise.resolve(reattached),
      settled: reattached,
      lastUsedAt: record.lastUsedAt,
      lastPersistedAt: record.lastUsedAt,
      users: new Set(),
    };
    // Closed meanwhile (a binding's first reconcile runs beside close): nothing is left to hold it.
    if (this.#leases.closed) {
      await releaseLease({ store: this.#store, ownerId: this.#ownerId, lease, resource: reattached });
      return undefined;
    }
    reattached.hibernation?.idle(); // no run uses it yet
    this.#leases.set(id, lease);
    traceTakeover(record, reattached, startedAt, this.#traceParent);
    return reattached.resourceId;
  }
}

/** Why the resource recorded on `record` is not reattached: `CAPABILITY_UNAVAILABLE`, `cause` the binding's error. */
function reattachError(record: LeaseRecord, cause: unknown): PaiError {
  const { capability, lifetime, key, resourceId } = record;
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new PaiError(
    "CAPABILITY_UNAVAILABLE",
    `the ${capability} recorded on lease "${lifetime}:${key}" (${resourceId}) could not be reattached, so the lease gets a new one: ${reason}`,
    { cause, details: { capability, lifetime, resourceId } },
  );
}

/** Resolves once `promise` settles (either way), or rejects with `signal`'s reason if it aborts first. */
function settledOrAborted(promise: Promise<unknown>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    const settle = () => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    };
    promise.then(settle, settle);
  });
}
