import { PaiError } from "../errors/pai-error.ts";
import type { CapabilityLifetime, ThreadStore } from "../threads/thread-store.ts";
import { BindingStarter } from "./binding-starter.ts";
import type {
  CapabilityBinding,
  CapabilityConnectionEvent,
  ProvisionedResource,
} from "./capability-binding.ts";
import type { Capability } from "./define-capability.ts";
import { LeaseHandover } from "./lease-handover.ts";
import { LeaseReconciler } from "./lease-reconciler.ts";
import type { LeaseScope } from "./lease-scope.ts";
import { type Lease, LeaseTable, leaseId, outlivesRuns } from "./lease-table.ts";
import type { OwnerLiveness } from "./owner-liveness.ts";
import { markProvisionFailure } from "./provision-failure.ts";
import { endLeases, releaseLease } from "./release-lease.ts";

/** The runtime names a run's scope from here. */
export type { LeaseScope } from "./lease-scope.ts";

/** Options of {@link CapabilityManager}. */
export interface CapabilityManagerOptions {
  bindings: ReadonlyMap<string, CapabilityBinding>;
  declarations: ReadonlyMap<string, Capability>;
  store: ThreadStore;
  owners: OwnerLiveness;
  /** How long a run waits for another live process to hand a lease over. @default 30000 */
  handoverTimeoutMs?: number;
  /** How often a waiting run looks whether the lease was handed over. @default 250 */
  handoverPollMs?: number;
  /**
   * Told when a binding's first reconcile (at its start) fails: the binding is used anyway, and the periodic
   * reconcile tries again.
   */
  onError?: (error: unknown) => void;
}

/**
 * Keys each capability resource by its lifetime, provisions it lazily and single-flight, records leases (with
 * this process as owner) in the thread store, and tears them down when their lifetime ends. Across processes:
 * it never touches a live owner's lease, takes over a dead owner's fresh `thread`/`user` leases, asks a live
 * holder to hand a lease over when a run here needs it, and has the bindings reap dead owners' resources.
 */
export class CapabilityManager {
  readonly #bindings: ReadonlyMap<string, CapabilityBinding>;
  readonly #store: ThreadStore;
  readonly #owners: OwnerLiveness;
  readonly #leases: LeaseTable;
  readonly #reconciler: LeaseReconciler;
  readonly #starter: BindingStarter;
  readonly #handover: LeaseHandover;

  constructor(options: CapabilityManagerOptions) {
    this.#bindings = options.bindings;
    this.#store = options.store;
    this.#owners = options.owners;
    this.#leases = new LeaseTable({
      bindings: options.bindings,
      declarations: options.declarations,
      store: options.store,
      ownerId: options.owners.ownerId,
    });
    this.#reconciler = new LeaseReconciler({
      store: options.store,
      ownerId: options.owners.ownerId,
      leases: this.#leases,
    });
    this.#starter = new BindingStarter({
      bindings: options.bindings,
      owners: options.owners,
      reconciler: this.#reconciler,
      onError: options.onError ?? (() => {}),
    });
    this.#handover = new LeaseHandover({
      store: options.store,
      owners: options.owners,
      leases: this.#leases,
      reconciler: this.#reconciler,
      handoverTimeoutMs: options.handoverTimeoutMs ?? 30_000,
      handoverPollMs: options.handoverPollMs ?? 250,
    });
  }

  /** The lifetime a capability's leases have: the binding's override or the declaration's default. */
  lifetimeOf(capability: string): CapabilityLifetime {
    return this.#leases.lifetimeOf(capability);
  }

  /**
   * A facade whose methods provision the resource on first use and then call through. Reading
   * `ctx.capabilities.x` starts nothing; the first method call does.
   */
  facade(capability: string, scope: LeaseScope): unknown {
    const methods = new Map<PropertyKey, unknown>();
    let bound:
      | { resource: ProvisionedResource; source: unknown; facade: Record<PropertyKey, unknown> }
      | undefined;
    /** The facade bound to this scope's signal, made once per resource (and again after it woke). */
    const facadeOf = (resource: ProvisionedResource) => {
      const source = resource.facade;
      if (bound?.resource !== resource || bound.source !== source) {
        const report = (connection: CapabilityConnectionEvent) =>
          scope.onStatus?.({
            capability,
            lifetime: this.lifetimeOf(capability),
            status: "connection",
            resourceId: resource.resourceId,
            connection,
          });
        const facade = resource.bind ? resource.bind({ signal: scope.signal, report }) : resource.facade;
        bound = { resource, source, facade: facade as Record<PropertyKey, unknown> };
      }
      return bound.facade;
    };
    return new Proxy(
      {},
      {
        get: (_target, property) => {
          if (property === "then") return undefined;
          let method = methods.get(property);
          if (!method) {
            method = async (...args: unknown[]) => {
              const facade = facadeOf(await this.#awake(capability, scope));
              const member = facade[property];
              if (typeof member !== "function") return member;
              return member.apply(facade, args);
            };
            methods.set(property, method);
          }
          return method;
        },
      },
    );
  }

  /**
   * The resource for `capability` in `scope`, running: a hibernated one is woken (reported as `woken`), one that
   * stopped on its own is started again (reported as `restarted`), one the binding removed while hibernated is
   * replaced by a new one.
   */
  async #awake(capability: string, scope: LeaseScope): Promise<ProvisionedResource> {
    for (;;) {
      const resource = await this.acquire(capability, scope);
      if (!resource.hibernation) return resource;
      const startedAt = Date.now();
      const before = resource.resourceId;
      let woke: Awaited<ReturnType<typeof resource.hibernation.wake>>;
      try {
        woke = await resource.hibernation.wake(scope.signal);
      } catch (error) {
        // No room to wake it, or a container that keeps stopping: the call is told why, as for a provisioning.
        if (!scope.signal.aborted) this.#failed(capability, scope, error, startedAt, resource.resourceId);
        throw error;
      }
      if (woke === "gone") {
        await this.#dropGone(capability, scope, resource);
        continue;
      }
      if (woke === "running") return resource;
      if (woke !== "woken" && resource.resourceId !== before)
        await this.#recordSuccessor(capability, scope, resource, before);
      scope.onStatus?.({
        capability,
        lifetime: this.lifetimeOf(capability),
        status: woke === "woken" ? "woken" : "restarted",
        resourceId: resource.resourceId,
        durationMs: Date.now() - startedAt,
        ...(woke === "woken" ? {} : { reason: woke.reason }),
      });
      return resource;
    }
  }

  /**
   * Tells the scope that its resource cannot be had (provisioned, woken or started again): a `failed` status, and
   * the error marked so that the call ends telling why (`provision-failed` with the error's code and numbers).
   */
  #failed(
    capability: string,
    scope: LeaseScope,
    error: unknown,
    startedAt: number,
    resourceId?: string,
  ): void {
    const failure = markProvisionFailure(error, capability);
    scope.onStatus?.({
      capability,
      lifetime: this.lifetimeOf(capability),
      status: "failed",
      ...(resourceId !== undefined ? { resourceId } : {}),
      durationMs: Date.now() - startedAt,
      error: failure.message,
      ...(failure.end.code !== undefined ? { code: failure.end.code } : {}),
      ...(failure.end.details !== undefined ? { details: failure.end.details } : {}),
    });
  }

  /** Records on its lease the new resource that took over a restarted one's files (its id and meta). */
  async #recordSuccessor(
    capability: string,
    scope: LeaseScope,
    resource: ProvisionedResource,
    replaced: string,
  ): Promise<void> {
    const { lifetime, key } = this.#leases.addressOf(capability, scope);
    const [record] = await this.#store.listLeases({ capability, lifetime, key });
    // A `run` lease has no record; a record of another resource or owner is not this lease's.
    if (record?.resourceId !== replaced || record.ownerId !== this.#owners.ownerId) return;
    await this.#store.putLease({
      ...record,
      resourceId: resource.resourceId,
      meta: resource.meta ?? record.meta,
      lastUsedAt: Date.now(),
    });
  }

  /** Forgets a lease whose resource the binding removed while it hibernated (its record too). */
  async #dropGone(capability: string, scope: LeaseScope, resource: ProvisionedResource): Promise<void> {
    const { lifetime, key, id } = this.#leases.addressOf(capability, scope);
    const lease = this.#leases.get(id);
    if (lease?.settled !== resource) return; // another call replaced it already
    this.#leases.delete(id);
    await resource.release().catch(() => undefined);
    await this.#store.deleteLease(capability, lifetime, key);
  }

  /** The resource for `capability` in `scope`, provisioning it if needed (concurrent callers share one). */
  async acquire(capability: string, scope: LeaseScope): Promise<ProvisionedResource> {
    const { lifetime, key, id } = this.#leases.addressOf(capability, scope);
    // A reconcile taking this lease over settles first: its resource is then this process's lease.
    await this.#reconciler.takeoversSettled(id, scope.signal);
    if (this.#leases.closed) throw new PaiError("CAPABILITY_UNAVAILABLE", "the runtime is closed");
    const binding = this.#bindings.get(capability);
    if (!binding) {
      throw new PaiError("MISSING_CAPABILITY", `no binding for capability "${capability}"`, {
        details: { capability },
      });
    }
    let lease = this.#leases.get(id);
    if (!lease) {
      const started = Date.now();
      scope.onStatus?.({ capability, lifetime, status: "provisioning" });
      const created: Lease = {
        capability,
        lifetime,
        key,
        resource: this.#obtain(binding, capability, lifetime, key, scope.signal),
        settled: undefined,
        lastUsedAt: Date.now(),
        lastPersistedAt: Date.now(),
        users: new Set(),
      };
      this.#leases.set(id, created);
      created.resource.then(
        (resource) => {
          created.settled = resource;
          if (created.users.size === 0 && outlivesRuns(lifetime)) resource.hibernation?.idle(); // its run ended
          scope.onStatus?.({
            capability,
            lifetime,
            status: "ready",
            resourceId: resource.resourceId,
            durationMs: Date.now() - started,
          });
        },
        (error: unknown) => {
          if (this.#leases.get(id) === created) this.#leases.delete(id);
          if (!scope.signal.aborted) this.#failed(capability, scope, error, started);
        },
      );
      lease = created;
    }
    this.#leases.use(lease, scope.runId);
    return lease.resource;
  }

  /** A `thread`/`user` resource recorded in the store (taken over or handed over), or a new one. */
  async #obtain(
    binding: CapabilityBinding,
    capability: string,
    lifetime: CapabilityLifetime,
    key: string,
    signal: AbortSignal,
  ): Promise<ProvisionedResource> {
    await this.#starter.start(binding);
    signal.throwIfAborted();
    if (outlivesRuns(lifetime)) {
      const recorded = await this.#handover.takeRecorded(
        binding,
        { capability, lifetime, key, id: leaseId(capability, lifetime, key) },
        signal,
      );
      if (recorded) return recorded;
    }
    return this.#provision(binding, capability, lifetime, key, signal);
  }

  async #provision(
    binding: CapabilityBinding,
    capability: string,
    lifetime: CapabilityLifetime,
    key: string,
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
      ownerId: this.#owners.ownerId,
    });
    return resource;
  }

  /** Prepares every binding now (warm pools, take over dead owners' leases) instead of on first use. */
  startAll(): Promise<void> {
    return this.#starter.startAll();
  }

  /**
   * The periodic pass over started bindings: takes over or frees dead owners' leases and reaps their
   * resources (see {@link startAll}). `live`: the owners alive now; `dead`: the owners known dead.
   * @returns true when every binding of this process is started and has dealt with the `dead` owners, so their
   * records may be forgotten; false while one is not started (it reaps them when it starts), and for a process
   * without bindings (it cannot tell whether another process still has their resources to free).
   * @throws AggregateError of the bindings that failed (the others were still reconciled)
   */
  async reconcile(live: ReadonlySet<string>, dead: ReadonlySet<string>): Promise<boolean> {
    if (this.#leases.closed) return false;
    return this.#starter.reconcileStarted(live, dead);
  }

  /**
   * Follows the store for this process's `thread`/`user` leases (every heartbeat): hands leases over to live
   * owners that asked, lets go of those taken over, releases those ended elsewhere (see `LeaseHandover.sync`).
   */
  syncLeases(live: ReadonlySet<string>): Promise<void> {
    return this.#handover.sync(live);
  }

  /**
   * The run no longer uses its leases (`thread`/`user` ones no other run uses may hibernate); its `run` leases are
   * released.
   */
  async endRun(runId: string): Promise<void> {
    for (const lease of this.#leases.values()) {
      if (!lease.users.delete(runId) || lease.users.size > 0 || !outlivesRuns(lease.lifetime)) continue;
      lease.settled?.hibernation?.idle();
    }
    await this.#releaseWhere((lease) => lease.lifetime === "run" && lease.key === runId);
  }

  /**
   * Releases the `thread` leases of a thread and deletes their records. A record another live process holds
   * is deleted too: that process releases its resource at its next sync.
   */
  async endThread(threadId: string): Promise<void> {
    await this.#releaseWhere((lease) => lease.lifetime === "thread" && lease.key === threadId);
    for (const record of await this.#store.listLeases({ lifetime: "thread", key: threadId })) {
      await this.#store.deleteLease(record.capability, record.lifetime, record.key);
    }
  }

  /** Releases `thread` and `user` leases idle for longer than their binding's TTL. */
  async sweepIdle(now = Date.now()): Promise<void> {
    await this.#releaseWhere((lease) => {
      if (!outlivesRuns(lease.lifetime)) return false;
      const ttl = this.#leases.idleTtlOf(lease.capability);
      return lease.settled !== undefined && lease.users.size === 0 && now - lease.lastUsedAt >= ttl;
    });
  }

  /** Active leases of this process, for tests and metrics. */
  leases(): Array<{
    capability: string;
    lifetime: CapabilityLifetime;
    key: string;
    resourceId: string | undefined;
  }> {
    return [...this.#leases.values()].map((lease) => ({
      capability: lease.capability,
      lifetime: lease.lifetime,
      key: lease.key,
      resourceId: lease.settled?.resourceId,
    }));
  }

  /**
   * Releases every lease this process owns (and their records), has the bindings remove the resources of leases
   * it ended without reattaching (no later process would know them), then closes every binding. Leases other
   * processes hold, or that were handed over, are left alone. With `handOver`, `thread`/`user` leases are let
   * go instead of released: their resources keep running and their records stay, for the next process.
   */
  async close(options: { handOver?: boolean } = {}): Promise<void> {
    if (this.#leases.closed) return;
    this.#leases.close();
    if (options.handOver) await this.#detachWhere((lease) => lease.lifetime !== "run");
    await this.#releaseWhere(() => true);
    await Promise.allSettled(
      [...this.#bindings.values()].map(async (binding) => {
        try {
          await this.#reconciler.reapOrphansAtClose(binding);
        } finally {
          await binding.close();
        }
      }),
    );
  }

  /** Frees the leases `predicate` picks: their resources and their records (see {@link releaseLease}). */
  #releaseWhere(predicate: (lease: Lease) => boolean): Promise<void> {
    return endLeases(this.#leases.takeWhere(predicate), (lease, resource) => this.#release(lease, resource));
  }

  /** Lets go of the leases `predicate` picks: their resources stay, their records too. */
  #detachWhere(predicate: (lease: Lease) => boolean): Promise<void> {
    return endLeases(this.#leases.takeWhere(predicate), async (_lease, resource) => resource.detach?.());
  }

  #release(lease: Lease, resource: ProvisionedResource): Promise<void> {
    return releaseLease({ store: this.#store, ownerId: this.#owners.ownerId, lease, resource });
  }
}
