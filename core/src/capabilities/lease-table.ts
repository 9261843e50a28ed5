import type { CapabilityLifetime, ThreadStore } from "../threads/thread-store.ts";
import type { CapabilityBinding, ProvisionedResource } from "./capability-binding.ts";
import type { Capability } from "./define-capability.ts";
import type { LeaseScope } from "./lease-scope.ts";

/**
 * Core's capability layer, in memory: a lease this process holds or is obtaining, the one resource of (capability,
 * lifetime, key).
 */
export interface HeldLease {
  capability: string;
  lifetime: CapabilityLifetime;
  key: string;
  resource: Promise<ProvisionedResource>;
  settled: ProvisionedResource | undefined;
  lastUsedAt: number;
  /** When `lastUsedAt` was last written to the store (touches are throttled). */
  lastPersistedAt: number;
  /** Runs of this process using it: a lease in use is not handed over. */
  users: Set<string>;
}

/** Where a scope's lease of a capability is: its lifetime, its key in that lifetime and its id in the table. */
export interface LeaseAddress {
  capability: string;
  lifetime: CapabilityLifetime;
  key: string;
  id: string;
}

/** What a {@link LeaseTable} keys and touches leases with. */
export interface LeaseTableOptions {
  bindings: ReadonlyMap<string, CapabilityBinding>;
  declarations: ReadonlyMap<string, Capability>;
  store: ThreadStore;
  /** This process's owner id: the key of `process` leases. */
  ownerId: string;
}

/** The idle TTL of a binding that sets none. */
const DEFAULT_IDLE_TTL_MS = 30 * 60_000;

/** How often a lease's last use is written to the store: enough for idle TTLs measured in minutes. */
const TOUCH_EVERY_MS = 30_000;

/**
 * The leases this process holds, by id: how a scope's lease is keyed (by the capability's lifetime), when it was
 * last used (written to the store, throttled), and whether the table still takes leases (not once closed).
 */
export class LeaseTable {
  readonly #leases = new Map<string, HeldLease>();
  readonly #bindings: ReadonlyMap<string, CapabilityBinding>;
  readonly #declarations: ReadonlyMap<string, Capability>;
  readonly #store: ThreadStore;
  readonly #ownerId: string;
  #closed = false;

  constructor(options: LeaseTableOptions) {
    this.#bindings = options.bindings;
    this.#declarations = options.declarations;
    this.#store = options.store;
    this.#ownerId = options.ownerId;
  }

  /** The lifetime a capability's leases have: the binding's override or the declaration's default. */
  lifetimeOf(capability: string): CapabilityLifetime {
    return (
      this.#bindings.get(capability)?.lifetime ??
      this.#declarations.get(capability)?.defaultLifetime ??
      "thread"
    );
  }

  /** How long a `thread`/`user` lease of `capability` may stay unused before it is released (and goes stale). */
  idleTtlOf(capability: string): number {
    return this.#bindings.get(capability)?.idleTtlMs ?? DEFAULT_IDLE_TTL_MS;
  }

  /** The lease of `capability` that `scope` uses: keyed by its run, thread, user or this process. */
  addressOf(capability: string, scope: LeaseScope): LeaseAddress {
    const lifetime = this.lifetimeOf(capability);
    const key = this.#keyOf(lifetime, scope);
    return { capability, lifetime, key, id: leaseId(capability, lifetime, key) };
  }

  /** True once the manager closed: nothing may hold a new lease then. */
  get closed(): boolean {
    return this.#closed;
  }

  close(): void {
    this.#closed = true;
  }

  get size(): number {
    return this.#leases.size;
  }

  get(id: string): HeldLease | undefined {
    return this.#leases.get(id);
  }

  has(id: string): boolean {
    return this.#leases.has(id);
  }

  set(id: string, lease: HeldLease): void {
    this.#leases.set(id, lease);
  }

  delete(id: string): void {
    this.#leases.delete(id);
  }

  /** The leases now, by id (a copy: the table may change while a caller goes through them). */
  entries(): Array<[string, HeldLease]> {
    return [...this.#leases];
  }

  values(): IterableIterator<HeldLease> {
    return this.#leases.values();
  }

  /** Removes the leases `predicate` picks and returns them. */
  takeWhere(predicate: (lease: HeldLease) => boolean): HeldLease[] {
    const picked = [...this.#leases.entries()].filter(([, lease]) => predicate(lease));
    for (const [id] of picked) this.#leases.delete(id);
    return picked.map(([, lease]) => lease);
  }

  /** Records that the run `runId` uses `lease` now; the store learns it at most every 30 s. */
  use(lease: HeldLease, runId: string): void {
    lease.users.add(runId);
    const now = Date.now();
    lease.lastUsedAt = now;
    if (lease.settled && now - lease.lastPersistedAt >= TOUCH_EVERY_MS) {
      lease.lastPersistedAt = now;
      void this.#store.touchLease(lease.capability, lease.lifetime, lease.key, now).catch(() => undefined);
    }
  }

  #keyOf(lifetime: CapabilityLifetime, scope: LeaseScope): string {
    switch (lifetime) {
      case "run":
        return scope.runId;
      case "thread":
        return scope.threadId;
      case "user":
        return scope.identityKey;
      case "process":
        return this.#ownerId;
    }
  }
}

/** The id of the lease of (capability, lifetime, key), in the table and for a store record. */
export function leaseId(capability: string, lifetime: CapabilityLifetime, key: string): string {
  return `${capability}\u0000${lifetime}\u0000${key}`;
}

/**
 * `thread` and `user` leases outlive their runs: they hibernate while no run uses them, expire after an idle TTL,
 * and pass from process to process (reattached, handed over, taken over). `run` ones end with their run, `process`
 * ones stay up with their process.
 */
export function outlivesRuns(lifetime: CapabilityLifetime): boolean {
  return lifetime === "thread" || lifetime === "user";
}
