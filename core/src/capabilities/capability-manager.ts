import type { Duplex } from "node:stream";
import type { PreviewRegistry } from "../previews/preview-registry.ts";
import type { PaiTelemetryFlags } from "../telemetry/pai-telemetry.ts";
import type { CapabilityLifetime, ThreadStore } from "../threads/thread-store.ts";
import { BindingStarter } from "./binding-starter.ts";
import type { CapabilityBinding, ProvisionedResource } from "./capability-binding.ts";
import { createCapabilityFacade } from "./capability-facade.ts";
import type { Capability } from "./define-capability.ts";
import { LeaseHandover } from "./lease-handover.ts";
import { LeaseProvisioner } from "./lease-provisioner.ts";
import { LeaseReconciler } from "./lease-reconciler.ts";
import type { LeaseScope } from "./lease-scope.ts";
import { type HeldLease, LeaseTable, leaseId, outlivesRuns } from "./lease-table.ts";
import type { OwnerLiveness } from "./owner-liveness.ts";
import { endLeases, releaseLease } from "./release-lease.ts";
import { ResourcePorts } from "./resource-ports.ts";
import { ResourceWaker } from "./resource-waker.ts";

/** The runtime names a run's scope from here. */

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
   * reconcile tries again; and why a recorded resource that is there could not be reattached (its lease gets a new
   * one).
   */
  onError?: (error: unknown) => void;
  /** The previews of this process: the facades' `bind` gets a way to open them; they end with their leases. */
  previews?: PreviewRegistry;
  /** The runtime's telemetry flags, for what no run asks for (a dead owner's lease taken over). @default spans on */
  telemetry?: PaiTelemetryFlags;
}

/**
 * Keys each capability resource by its lifetime, provisions it lazily and single-flight, records leases (with
 * this process as owner) in the thread store, and tears them down when their lifetime ends. Across processes:
 * it never touches a live owner's lease, takes over a dead owner's fresh `thread`/`user` leases, asks a live
 * holder to hand a lease over when a run here needs it, and has the bindings reap dead owners' resources.
 *
 * It composes one part per concern: {@link LeaseTable} (this process's leases, their keys and last use),
 * {@link LeaseProvisioner} (a scope's lease, provisioned or reattached, with its status events),
 * {@link ResourceWaker} (hibernated or stopped resources woken before a call), {@link LeaseHandover} (leases
 * passed between live processes), {@link LeaseReconciler} (dead owners' leases taken over, their resources
 * reaped), {@link BindingStarter} (each binding started once) and the facade tools call
 * ({@link createCapabilityFacade}). Ending leases (run end, thread end, idle TTL, close) is its own.
 */
export class CapabilityManager {
  readonly #bindings: ReadonlyMap<string, CapabilityBinding>;
  readonly #declarations: ReadonlyMap<string, Capability>;
  readonly #store: ThreadStore;
  readonly #owners: OwnerLiveness;
  readonly #leases: LeaseTable;
  readonly #reconciler: LeaseReconciler;
  readonly #starter: BindingStarter;
  readonly #handover: LeaseHandover;
  readonly #waker: ResourceWaker;
  readonly #ports: ResourcePorts;

  constructor(options: CapabilityManagerOptions) {
    const { bindings, declarations, store, owners } = options;
    const ownerId = owners.ownerId;
    this.#bindings = bindings;
    this.#declarations = declarations;
    this.#store = store;
    this.#owners = owners;
    this.#leases = new LeaseTable({ bindings, declarations, store, ownerId });
    this.#reconciler = new LeaseReconciler({
      store,
      ownerId,
      leases: this.#leases,
      telemetry: options.telemetry,
      onError: options.onError,
    });
    this.#starter = new BindingStarter({
      bindings,
      owners,
      reconciler: this.#reconciler,
      onError: options.onError ?? (() => {}),
    });
    this.#handover = new LeaseHandover({
      store,
      owners,
      leases: this.#leases,
      reconciler: this.#reconciler,
      handoverTimeoutMs: options.handoverTimeoutMs ?? 30_000,
      handoverPollMs: options.handoverPollMs ?? 250,
    });
    const provisioner = new LeaseProvisioner({
      bindings,
      store,
      ownerId,
      leases: this.#leases,
      starter: this.#starter,
      reconciler: this.#reconciler,
      handover: this.#handover,
    });
    this.#waker = new ResourceWaker({ store, ownerId, leases: this.#leases, provisioner });
    this.#ports = new ResourcePorts({
      leases: this.#leases,
      waker: this.#waker,
      previews: options.previews,
      endUse: (runId) => this.endRun(runId),
    });
  }

  /**
   * The facade tools see at `ctx.capabilities.<capability>` in `scope`: the members its declaration names, which
   * provision the resource on first use (and wake it before each call), then call through. Reading
   * `ctx.capabilities.x` starts nothing; any other name is `undefined` and starts nothing either.
   */
  facade(capability: string, scope: LeaseScope): unknown {
    return createCapabilityFacade({
      capability,
      lifetime: this.#leases.lifetimeOf(capability),
      members: this.#declarations.get(capability)?.members ?? [],
      scope,
      awake: () => this.#waker.awake(capability, scope),
      previews: this.#ports.exposerFor(capability, scope),
    });
  }

  /** A new connection to `port` on the resource of `capability` in `scope` (see {@link ResourcePorts.open}). */
  openPort(capability: string, scope: LeaseScope, port: number): Promise<Duplex> {
    return this.#ports.open(capability, scope, port);
  }

  /**
   * The resources of `threadId`'s `thread` leases that the run `runId` used (and so may have changed): what a
   * checkpoint at the run's end records.
   */
  resourcesUsedBy(
    runId: string,
    threadId: string,
  ): Array<{ capability: string; resource: ProvisionedResource }> {
    return [...this.#leases.values()].flatMap((lease) =>
      lease.lifetime === "thread" && lease.key === threadId && lease.users.has(runId) && lease.settled
        ? [{ capability: lease.capability, resource: lease.settled }]
        : [],
    );
  }

  /**
   * The resource of `capability` in `scope`, running: provisioned, reattached or woken as for a facade call, and used
   * by `scope.runId` until {@link endRun}. For the runtime's own work on a resource (restoring a checkpoint).
   */
  awake(capability: string, scope: LeaseScope): Promise<ProvisionedResource> {
    return this.#waker.awake(capability, scope);
  }

  /** The lifetime `capability`'s leases have. */
  lifetimeOf(capability: string): CapabilityLifetime {
    return this.#leases.lifetimeOf(capability);
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
   * it ended without reattaching (no later process would know them) and of leases handed over to it that it never
   * held, then closes every binding. Leases other processes hold, or that it handed over, are left alone. With `handOver`, `thread`/`user` leases are let
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
          if (!options.handOver) await this.#reconciler.dropUnheldAtClose(binding);
          await this.#reconciler.reapOrphansAtClose(binding);
        } finally {
          await binding.close();
        }
      }),
    );
  }

  /** Frees the leases `predicate` picks: their resources and their records (see {@link releaseLease}). */
  #releaseWhere(predicate: (lease: HeldLease) => boolean): Promise<void> {
    return endLeases(this.#take(predicate), (lease, resource) => this.#release(lease, resource));
  }

  /** Lets go of the leases `predicate` picks: their resources stay, their records too. */
  #detachWhere(predicate: (lease: HeldLease) => boolean): Promise<void> {
    return endLeases(this.#take(predicate), async (_lease, resource) => resource.detach?.());
  }

  /** Removes the leases `predicate` picks from the table; their previews close with them. */
  #take(predicate: (lease: HeldLease) => boolean): HeldLease[] {
    const taken = this.#leases.takeWhere(predicate);
    for (const lease of taken) this.#ports.leaseEnded(leaseId(lease.capability, lease.lifetime, lease.key));
    return taken;
  }

  #release(lease: HeldLease, resource: ProvisionedResource): Promise<void> {
    return releaseLease({ store: this.#store, ownerId: this.#owners.ownerId, lease, resource });
  }
}
