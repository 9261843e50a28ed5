import { PaiError } from "../errors/pai-error.ts";
import type { ThreadStore } from "../threads/thread-store.ts";
import { type Obtained, traceAcquire } from "./acquire-span.ts";
import type { BindingStarter } from "./binding-starter.ts";
import type { CapabilityBinding, ProvisionedResource } from "./capability-binding.ts";
import type { LeaseHandover } from "./lease-handover.ts";
import type { LeaseReconciler } from "./lease-reconciler.ts";
import type { LeaseScope } from "./lease-scope.ts";
import { type HeldLease, type LeaseAddress, type LeaseTable, outlivesRuns } from "./lease-table.ts";
import { reportProvisionFailure } from "./report-provision-failure.ts";

/** What a {@link LeaseProvisioner} provisions with, and where it records leases. */
export interface LeaseProvisionerOptions {
  bindings: ReadonlyMap<string, CapabilityBinding>;
  store: ThreadStore;
  /** This process's owner id, recorded on every lease it provisions. */
  ownerId: string;
  leases: LeaseTable;
  starter: BindingStarter;
  reconciler: LeaseReconciler;
  handover: LeaseHandover;
}

/**
 * Gives a scope its lease's resource, lazily and single-flight: the first caller opens the lease (its binding
 * started first), concurrent callers share it. A `thread`/`user` lease recorded in the store is reattached,
 * taken over or handed over; otherwise the binding provisions a new resource and the lease is recorded with this
 * process as owner. The scope is told `provisioning`, then `ready` or `failed`.
 */
export class LeaseProvisioner {
  readonly #bindings: ReadonlyMap<string, CapabilityBinding>;
  readonly #store: ThreadStore;
  readonly #ownerId: string;
  readonly #leases: LeaseTable;
  readonly #starter: BindingStarter;
  readonly #reconciler: LeaseReconciler;
  readonly #handover: LeaseHandover;

  constructor(options: LeaseProvisionerOptions) {
    this.#bindings = options.bindings;
    this.#store = options.store;
    this.#ownerId = options.ownerId;
    this.#leases = options.leases;
    this.#starter = options.starter;
    this.#reconciler = options.reconciler;
    this.#handover = options.handover;
  }

  /**
   * The resource for `capability` in `scope`, provisioning it if needed (concurrent callers share one).
   * @throws PaiError `CAPABILITY_UNAVAILABLE` once the manager closed, `MISSING_CAPABILITY` without a binding
   */
  async acquire(capability: string, scope: LeaseScope): Promise<ProvisionedResource> {
    const address = this.#leases.addressOf(capability, scope);
    // A reconcile taking this lease over settles first: its resource is then this process's lease.
    await this.#reconciler.takeoversSettled(address.id, scope.signal);
    if (this.#leases.closed) throw new PaiError("CAPABILITY_UNAVAILABLE", "the runtime is closed");
    const binding = this.#bindings.get(capability);
    if (!binding) {
      throw new PaiError("MISSING_CAPABILITY", `no binding for capability "${capability}"`, {
        details: { capability },
      });
    }
    const lease = this.#leases.get(address.id) ?? this.#open(binding, address, scope);
    this.#leases.use(lease, scope.runId);
    return lease.resource;
  }

  /** A new lease in the table whose resource is being obtained; the scope hears how it goes. */
  #open(binding: CapabilityBinding, address: LeaseAddress, scope: LeaseScope): HeldLease {
    const { capability, lifetime, key, id } = address;
    const startedAt = Date.now();
    scope.onStatus?.({ capability, lifetime, status: "provisioning" });
    const lease: HeldLease = {
      capability,
      lifetime,
      key,
      resource: traceAcquire(address, () => this.#obtain(binding, address, scope.signal)),
      settled: undefined,
      lastUsedAt: Date.now(),
      lastPersistedAt: Date.now(),
      users: new Set(),
    };
    this.#leases.set(id, lease);
    lease.resource.then(
      (resource) => {
        lease.settled = resource;
        if (lease.users.size === 0 && outlivesRuns(lifetime)) resource.hibernation?.idle(); // its run ended
        scope.onStatus?.({
          capability,
          lifetime,
          status: "ready",
          resourceId: resource.resourceId,
          durationMs: Date.now() - startedAt,
        });
      },
      (error: unknown) => {
        if (this.#leases.get(id) === lease) this.#leases.delete(id);
        if (!scope.signal.aborted) reportProvisionFailure(scope, { capability, lifetime, error, startedAt });
      },
    );
    return lease;
  }

  /** A `thread`/`user` resource recorded in the store (taken over or handed over), or a new one. */
  async #obtain(binding: CapabilityBinding, address: LeaseAddress, signal: AbortSignal): Promise<Obtained> {
    await this.#starter.start(binding);
    signal.throwIfAborted();
    if (outlivesRuns(address.lifetime)) {
      const recorded = await this.#handover.takeRecorded(binding, address, signal);
      if (recorded) return { resource: recorded, reattached: true };
    }
    return { resource: await this.#provision(binding, address, signal), reattached: false };
  }

  /** A new resource from the binding, recorded as this process's lease (released if the scope aborted meanwhile). */
  async #provision(
    binding: CapabilityBinding,
    { capability, lifetime, key }: LeaseAddress,
    signal: AbortSignal,
  ): Promise<ProvisionedResource> {
    const resource = await binding.provision({ leaseKey: `${lifetime}:${key}`, lifetime, signal });
    if (signal.aborted) {
      await resource.release();
      signal.throwIfAborted();
    }
    const now = Date.now();
    await this.#store.putLease({
      capability,
      lifetime,
      key,
      resourceId: resource.resourceId,
      meta: resource.meta ?? {},
      createdAt: now,
      lastUsedAt: now,
      ownerId: this.#ownerId,
    });
    return resource;
  }
}
