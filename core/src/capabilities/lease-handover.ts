import { PaiError } from "../errors/pai-error.ts";
import type { ThreadStore } from "../threads/thread-store.ts";
import type { CapabilityBinding, ProvisionedResource } from "./capability-binding.ts";
import type { LeaseReconciler } from "./lease-reconciler.ts";
import { type HeldLease, type LeaseAddress, type LeaseTable, leaseId, outlivesRuns } from "./lease-table.ts";
import type { OwnerLiveness } from "./owner-liveness.ts";
import { releaseLease } from "./release-lease.ts";

/** What a {@link LeaseHandover} reads and records leases in, and how long a run waits for a live holder. */
export interface LeaseHandoverOptions {
  store: ThreadStore;
  owners: OwnerLiveness;
  leases: LeaseTable;
  reconciler: LeaseReconciler;
  /** How long a run waits for another live process to hand a lease over. */
  handoverTimeoutMs: number;
  /** How often a waiting run looks whether the lease was handed over. */
  handoverPollMs: number;
}

/**
 * Passes `thread`/`user` leases between live processes sharing one store. The process that needs a lease another
 * live process holds asks for it ({@link takeRecorded}); the holder hands it over once no run of its own uses it
 * ({@link sync}, every heartbeat), and lets go of what another process took over.
 */
export class LeaseHandover {
  readonly #store: ThreadStore;
  readonly #owners: OwnerLiveness;
  readonly #leases: LeaseTable;
  readonly #reconciler: LeaseReconciler;
  readonly #handoverTimeoutMs: number;
  readonly #handoverPollMs: number;

  constructor(options: LeaseHandoverOptions) {
    this.#store = options.store;
    this.#owners = options.owners;
    this.#leases = options.leases;
    this.#reconciler = options.reconciler;
    this.#handoverTimeoutMs = options.handoverTimeoutMs;
    this.#handoverPollMs = options.handoverPollMs;
  }

  /**
   * The resource a lease in the store records, made this process's: a dead owner's is claimed, a live owner is
   * asked to hand it over (waiting up to `handoverTimeoutMs`). `undefined` when there is none to reattach.
   * @throws PaiError `CAPABILITY_BUSY` when the live holder does not hand it over in time
   */
  async takeRecorded(
    binding: CapabilityBinding,
    { capability, lifetime, key }: LeaseAddress,
    signal: AbortSignal,
  ): Promise<ProvisionedResource | undefined> {
    const self = this.#owners.ownerId;
    const deadline = Date.now() + this.#handoverTimeoutMs;
    for (;;) {
      const [record] = await this.#store.listLeases({ capability, lifetime, key });
      if (!record) return undefined;
      if (record.ownerId === self) return this.#reconciler.reattach(binding, record, signal);
      const live = await this.#owners.liveOwners();
      if (record.ownerId === undefined || !live.has(record.ownerId)) {
        const claimed = await this.#store.claimLease(capability, lifetime, key, {
          from: record.ownerId,
          to: self,
        });
        if (claimed) return this.#reconciler.reattach(binding, record, signal);
        continue;
      }
      if (Date.now() >= deadline) {
        throw new PaiError(
          "CAPABILITY_BUSY",
          `the ${capability} lease "${lifetime}:${key}" is held by another live process (${record.ownerId}) that did not hand it over within ${this.#handoverTimeoutMs} ms`,
          {
            details: { capability, lifetime, holder: record.ownerId, waitedMs: this.#handoverTimeoutMs },
          },
        );
      }
      await this.#store.requestLeaseHandover(capability, lifetime, key, { from: record.ownerId, to: self });
      await delay(this.#handoverPollMs, signal);
    }
  }

  /**
   * Follows the store for this process's `thread`/`user` leases (every heartbeat): hands a lease over to the
   * live owner that asked for it once no run here uses it; lets go of a lease another process took over
   * (this process was presumed dead); releases one whose record was deleted (the thread was ended elsewhere)
   * and, once no run here uses it, one whose record names another resource (another process provisioned the
   * same new thread at the same moment, and its record won).
   */
  async sync(live: ReadonlySet<string>): Promise<void> {
    if (this.#leases.closed || this.#leases.size === 0) return;
    const self = this.#owners.ownerId;
    const records = new Map(
      (await this.#store.listLeases()).map((record) => [
        leaseId(record.capability, record.lifetime, record.key),
        record,
      ]),
    );
    for (const [id, lease] of this.#leases.entries()) {
      const resource = lease.settled;
      if (!resource || !outlivesRuns(lease.lifetime)) continue;
      const record = records.get(id);
      if (!record || record.ownerId !== self || record.resourceId !== resource.resourceId) {
        await this.#followChangedRecord(id, lease, resource);
      } else if (
        record.handoverTo !== undefined &&
        record.handoverTo !== self &&
        live.has(record.handoverTo) &&
        lease.users.size === 0
      ) {
        await this.#handOver(id, lease, resource, record.handoverTo);
      }
    }
  }

  /**
   * A lease whose record the listing showed gone, another owner's or another resource's. The listing may predate
   * this lease's record (provisioned or taken over meanwhile), so the record is read again before acting on it.
   */
  async #followChangedRecord(id: string, lease: HeldLease, resource: ProvisionedResource): Promise<void> {
    const [current] = await this.#store.listLeases({
      capability: lease.capability,
      lifetime: lease.lifetime,
      key: lease.key,
    });
    if (this.#leases.get(id) !== lease) return;
    if (!current) {
      this.#leases.delete(id);
      await resource.release().catch(() => undefined);
    } else if (current.resourceId !== resource.resourceId) {
      // Another process's record won for the same key: free this process's resource once no run uses it.
      if (lease.users.size > 0) return;
      this.#leases.delete(id);
      await resource.release().catch(() => undefined);
    } else if (current.ownerId !== this.#owners.ownerId) {
      this.#leases.delete(id);
      await resource.detach?.().catch(() => undefined);
    }
  }

  /** Gives the lease to the live owner `to` that asked for it; frees it if the store refuses the claim. */
  async #handOver(id: string, lease: HeldLease, resource: ProvisionedResource, to: string): Promise<void> {
    const self = this.#owners.ownerId;
    // A pass that began before this process started closing leaves the lease to the close, which frees it.
    if (this.#leases.closed || this.#leases.get(id) !== lease) return;
    this.#leases.delete(id);
    const handedOver = await this.#store
      .claimLease(lease.capability, lease.lifetime, lease.key, { from: self, to })
      .catch(() => false);
    if (handedOver) await resource.detach?.().catch(() => undefined);
    else await releaseLease({ store: this.#store, ownerId: self, lease, resource });
  }
}

/** Waits `ms`, or rejects with `signal`'s reason. */
function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
