import { PaiError } from "../errors/pai-error.ts";
import type { CapabilityLifetime, ThreadStore } from "../threads/thread-store.ts";
import type {
  CapabilityBinding,
  CapabilityConnectionEvent,
  ProvisionedResource,
} from "./capability-binding.ts";
import type { Capability } from "./define-capability.ts";

/** Who is asking: the ids a lease key is chosen from. */
export interface LeaseScope {
  runId: string;
  threadId: string;
  identityKey: string;
  signal: AbortSignal;
  /** Told when this scope starts provisioning a resource and when it is ready (or failed). */
  onStatus?: (event: CapabilityStatusEvent) => void;
}

/**
 * Provisioning progress of one lease, and the network connections its resource made during the run, as the run
 * streams them (`data-pai-capability` parts).
 */
export interface CapabilityStatusEvent {
  capability: string;
  lifetime: CapabilityLifetime;
  status: "provisioning" | "ready" | "failed" | "connection";
  resourceId?: string;
  durationMs?: number;
  error?: string;
  /** With `status: "connection"`: the connection. */
  connection?: CapabilityConnectionEvent;
}

interface Lease {
  capability: string;
  lifetime: CapabilityLifetime;
  key: string;
  resource: Promise<ProvisionedResource>;
  settled: ProvisionedResource | undefined;
  lastUsedAt: number;
  /** When `lastUsedAt` was last written to the store (touches are throttled). */
  lastPersistedAt: number;
}

/** How often a lease's last use is written to the store: enough for idle TTLs measured in minutes. */
const TOUCH_EVERY_MS = 30_000;

const DEFAULT_IDLE_TTL_MS = 30 * 60_000;

/**
 * Keys each capability resource by its lifetime, provisions it lazily and single-flight, records leases in
 * the thread store, and tears them down when their lifetime ends.
 */
export class CapabilityManager {
  readonly #bindings: ReadonlyMap<string, CapabilityBinding>;
  readonly #declarations: ReadonlyMap<string, Capability>;
  readonly #store: ThreadStore;
  readonly #leases = new Map<string, Lease>();
  readonly #started = new Map<string, Promise<void>>();
  #sweeper: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: {
    bindings: ReadonlyMap<string, CapabilityBinding>;
    declarations: ReadonlyMap<string, Capability>;
    store: ThreadStore;
    sweepIntervalMs?: number;
  }) {
    this.#bindings = options.bindings;
    this.#declarations = options.declarations;
    this.#store = options.store;
    if (options.bindings.size > 0) {
      this.#sweeper = setInterval(() => void this.sweepIdle(), options.sweepIntervalMs ?? 30_000);
      this.#sweeper.unref();
    }
  }

  /** The lifetime a capability's leases have: the binding's override or the declaration's default. */
  lifetimeOf(capability: string): CapabilityLifetime {
    return (
      this.#bindings.get(capability)?.lifetime ??
      this.#declarations.get(capability)?.defaultLifetime ??
      "thread"
    );
  }

  /**
   * A facade whose methods provision the resource on first use and then call through. Reading
   * `ctx.capabilities.x` starts nothing; the first method call does.
   */
  facade(capability: string, scope: LeaseScope): unknown {
    const methods = new Map<PropertyKey, unknown>();
    let bound: { resource: ProvisionedResource; facade: Record<PropertyKey, unknown> } | undefined;
    /** The facade bound to this scope's signal, made once per resource. */
    const facadeOf = (resource: ProvisionedResource) => {
      if (bound?.resource !== resource) {
        const report = (connection: CapabilityConnectionEvent) =>
          scope.onStatus?.({
            capability,
            lifetime: this.lifetimeOf(capability),
            status: "connection",
            resourceId: resource.resourceId,
            connection,
          });
        const facade = resource.bind ? resource.bind({ signal: scope.signal, report }) : resource.facade;
        bound = { resource, facade: facade as Record<PropertyKey, unknown> };
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
              const facade = facadeOf(await this.acquire(capability, scope));
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

  /** The resource for `capability` in `scope`, provisioning it if needed (concurrent callers share one). */
  async acquire(capability: string, scope: LeaseScope): Promise<ProvisionedResource> {
    if (this.#closed) throw new PaiError("CAPABILITY_UNAVAILABLE", "the runtime is closed");
    const binding = this.#bindings.get(capability);
    if (!binding) {
      throw new PaiError("MISSING_CAPABILITY", `no binding for capability "${capability}"`, {
        details: { capability },
      });
    }
    const lifetime = this.lifetimeOf(capability);
    const key = leaseKeyFor(lifetime, scope);
    const id = leaseId(capability, lifetime, key);
    let lease = this.#leases.get(id);
    if (!lease) {
      const started = Date.now();
      scope.onStatus?.({ capability, lifetime, status: "provisioning" });
      const created: Lease = {
        capability,
        lifetime,
        key,
        resource: this.#provision(binding, capability, lifetime, key, scope.signal),
        settled: undefined,
        lastUsedAt: Date.now(),
        lastPersistedAt: Date.now(),
      };
      this.#leases.set(id, created);
      created.resource.then(
        (resource) => {
          created.settled = resource;
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
          scope.onStatus?.({
            capability,
            lifetime,
            status: "failed",
            durationMs: Date.now() - started,
            error: error instanceof Error ? error.message : String(error),
          });
        },
      );
      lease = created;
    }
    const now = Date.now();
    lease.lastUsedAt = now;
    if (lease.settled && now - lease.lastPersistedAt >= TOUCH_EVERY_MS) {
      lease.lastPersistedAt = now;
      void this.#store.touchLease(capability, lifetime, key, now).catch(() => undefined);
    }
    return lease.resource;
  }

  async #provision(
    binding: CapabilityBinding,
    capability: string,
    lifetime: CapabilityLifetime,
    key: string,
    signal: AbortSignal,
  ): Promise<ProvisionedResource> {
    await this.#start(binding);
    signal.throwIfAborted();
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
    });
    return resource;
  }

  /** Starts a binding once: warms it, reattaches recorded leases, reaps what no lease owns. */
  #start(binding: CapabilityBinding): Promise<void> {
    let started = this.#started.get(binding.capability);
    if (!started) {
      started = this.#startBinding(binding);
      this.#started.set(binding.capability, started);
      started.catch(() => this.#started.delete(binding.capability));
    }
    return started;
  }

  async #startBinding(binding: CapabilityBinding): Promise<void> {
    await binding.start?.();
    const recorded = await this.#store.listLeases({ capability: binding.capability });
    const keep: string[] = [];
    for (const record of recorded) {
      const id = leaseId(record.capability, record.lifetime, record.key);
      if (this.#leases.has(id)) {
        keep.push(record.resourceId);
        continue;
      }
      const ttl = binding.idleTtlMs ?? DEFAULT_IDLE_TTL_MS;
      const fresh = Date.now() - record.lastUsedAt < ttl;
      const reattached =
        fresh && (record.lifetime === "thread" || record.lifetime === "user")
          ? await binding.reattach?.(record, AbortSignal.timeout(30_000)).catch(() => undefined)
          : undefined;
      if (reattached) {
        keep.push(reattached.resourceId);
        this.#leases.set(id, {
          capability: record.capability,
          lifetime: record.lifetime,
          key: record.key,
          resource: Promise.resolve(reattached),
          settled: reattached,
          lastUsedAt: record.lastUsedAt,
          lastPersistedAt: record.lastUsedAt,
        });
      } else {
        await this.#store.deleteLease(record.capability, record.lifetime, record.key);
      }
    }
    await binding.reapUnowned?.(keep);
  }

  /** Prepares every binding now (warm pools, reattach leases) instead of on first use. */
  async startAll(): Promise<void> {
    await Promise.all([...this.#bindings.values()].map((binding) => this.#start(binding)));
  }

  /** Releases the `run` leases of a run. */
  endRun(runId: string): Promise<void> {
    return this.#releaseWhere((lease) => lease.lifetime === "run" && lease.key === runId);
  }

  /** Releases the `thread` leases of a thread (and any `run` leases on it are ended by their runs). */
  async endThread(threadId: string): Promise<void> {
    await this.#releaseWhere((lease) => lease.lifetime === "thread" && lease.key === threadId);
    for (const record of await this.#store.listLeases({ lifetime: "thread", key: threadId })) {
      await this.#store.deleteLease(record.capability, record.lifetime, record.key);
    }
  }

  /** Releases `thread` and `user` leases idle for longer than their binding's TTL. */
  async sweepIdle(now = Date.now()): Promise<void> {
    await this.#releaseWhere((lease) => {
      if (lease.lifetime !== "thread" && lease.lifetime !== "user") return false;
      const ttl = this.#bindings.get(lease.capability)?.idleTtlMs ?? DEFAULT_IDLE_TTL_MS;
      return lease.settled !== undefined && now - lease.lastUsedAt >= ttl;
    });
  }

  /** Active leases, for tests and metrics. */
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

  /** Releases every lease and closes every binding. Recorded `thread`/`user` leases are dropped too. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#sweeper) clearInterval(this.#sweeper);
    await this.#releaseWhere(() => true);
    await Promise.allSettled([...this.#bindings.values()].map((binding) => binding.close()));
  }

  async #releaseWhere(predicate: (lease: Lease) => boolean): Promise<void> {
    const doomed = [...this.#leases.entries()].filter(([, lease]) => predicate(lease));
    for (const [id] of doomed) this.#leases.delete(id);
    await Promise.allSettled(
      doomed.map(async ([, lease]) => {
        const resource = await lease.resource.catch(() => undefined);
        if (!resource) return;
        try {
          await resource.release();
        } finally {
          await this.#store.deleteLease(lease.capability, lease.lifetime, lease.key).catch(() => undefined);
        }
      }),
    );
  }
}

function leaseKeyFor(lifetime: CapabilityLifetime, scope: LeaseScope): string {
  switch (lifetime) {
    case "run":
      return scope.runId;
    case "thread":
      return scope.threadId;
    case "user":
      return scope.identityKey;
    case "process":
      return "process";
  }
}

function leaseId(capability: string, lifetime: CapabilityLifetime, key: string): string {
  return `${capability}\u0000${lifetime}\u0000${key}`;
}
