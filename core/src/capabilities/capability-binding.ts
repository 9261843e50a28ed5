import type { Duplex } from "node:stream";
import type { ResourceCheckpoints } from "../checkpoints/checkpoint-blob-store.ts";
import type { PreviewExposer } from "../previews/port-preview.ts";
import type { CapabilityLifetime, LeaseRecord } from "../threads/thread-store.ts";

/** A live resource a binding handed out: the facade tools see, plus how to find and free it. */
export interface ProvisionedResource<FACADE = unknown> {
  facade: FACADE;
  /** The binding's handle (e.g. a container id), recorded on the lease. */
  resourceId: string;
  /** What the binding needs to reattach after a restart. */
  meta?: Record<string, unknown>;
  /** Frees the resource. Called once, when the lease ends. */
  release(): Promise<void>;
  /**
   * Lets go of the resource without removing it: the lease was handed over to (or taken over by) another
   * process, which reattaches it. A binding that keeps per-process bookkeeping (a pool's count of leased
   * containers) drops it here. Optional: without it nothing is tracked that needs dropping.
   */
  detach?(): Promise<void>;
  /**
   * The facade as one run sees it: every operation is also stopped by `signal` (the run's Stop), so a tool
   * that passes no signal of its own is still cancelled with its run. `report` streams a network connection the
   * resource made on the run's behalf as a capability status event (`status: "connection"`). `previews` opens
   * previews of the resource's ports (see {@link openPort}); absent where the runtime serves none.
   */
  bind?(scope: {
    signal: AbortSignal;
    report?: (event: CapabilityConnectionEvent) => void;
    previews?: PreviewExposer;
  }): FACADE;
  /**
   * A new connection to `port` on the resource's own loopback (a server a program in the sandbox listens on), as a
   * byte stream. Rejects (a `PaiError`-like error with a code) when nothing listens there. Previews reach the
   * resource through it; optional: without it the resource's ports cannot be previewed.
   */
  openPort?(port: number, signal: AbortSignal): Promise<Duplex>;
  /**
   * Checkpoints of the resource's state (a sandbox's `/workspace`), taken after each run and restored by a rewind
   * or a fork. Optional: without it the resource's state is not rewound.
   */
  checkpoints?: ResourceCheckpoints;
  /**
   * A resource that can hibernate while no run uses it (a stopped container: files kept, processes gone, no
   * longer counted against its pool). The runtime calls `wake` before every facade call and, for `thread` and
   * `user` leases, `idle` once no run of this process uses the lease. Optional: without it the resource simply stays up.
   */
  hibernation?: ResourceHibernation;
  /** How the binding obtained it (a warm or a cold container, where, how long): telemetry only. Optional. */
  acquisition?: ResourceAcquisition;
}

/** How a binding obtained a resource, for the `pai.capability.acquire` span. */
export interface ResourceAcquisition {
  /** `warm`: ready before it was asked for (a pool's warm container); `cold`: made for this request. */
  source: "warm" | "cold";
  /** Where it runs (a Docker engine's id). */
  engine?: string;
  /** How long the request waited for it, in milliseconds. */
  waitMs?: number;
  /** How long making it took (create, start, set up), in milliseconds. */
  createMs?: number;
}

/**
 * What `ResourceHibernation.wake` resolves to when the resource had stopped outside PAI's wish (a container's main
 * process killed, the container stopped from outside, its engine restarted) and was started again: its files kept,
 * its processes gone, or a new resource that took its files over (its `resourceId` then names the new one).
 */
export interface ResourceRestart {
  status: "restarted";
  /** Why it stopped (and how it came back), in words for a person or a model. */
  reason: string;
}

/** How the runtime drives a resource's hibernation (see `ProvisionedResource.hibernation`). */
export interface ResourceHibernation {
  /**
   * Marks the resource in use (never hibernated until `idle`) and makes sure it runs: a hibernated one is woken
   * first (the call waits). `"woken"` when it had to (the runtime then binds its facade anew and reports a
   * `woken` capability status); `"gone"` when the binding removed it while hibernated (over its budget): the
   * runtime then drops the lease and provisions a new resource; a {@link ResourceRestart} when it had stopped on
   * its own and was started again (the runtime binds its facade anew, records a changed `resourceId` on the lease
   * and reports a `restarted` capability status). A resource that keeps stopping is not started again in a loop:
   * `wake` then rejects (the binding's error, e.g. `CONTAINER_LOST`).
   */
  wake(signal: AbortSignal): Promise<"running" | "woken" | "gone" | ResourceRestart>;
  /** No run of this process uses the resource now: the binding may hibernate it. */
  idle(): void;
}

/** One network connection a resource made (e.g. through a sandbox's egress proxy), reported when it ends. */
export interface CapabilityConnectionEvent {
  /** `host:port` as the program asked for it. */
  target: string;
  decision: "allowed" | "refused";
  /** Why it was refused or failed, in one line. */
  reason?: string;
  /** The address connected to (or refused). */
  address?: string;
  /** Bytes from the resource to the target. */
  bytesUp: number;
  /** Bytes from the target to the resource. */
  bytesDown: number;
  durationMs: number;
}

/** What a binding is asked to provision. */
export interface ProvisionRequest {
  /** `<lifetime>:<key>`, e.g. `thread:abc`; bindings label resources with it. */
  leaseKey: string;
  lifetime: CapabilityLifetime;
  /** Aborted when the run that asked is cancelled: provisioning must then leave nothing behind. */
  signal: AbortSignal;
}

/** What a binding learns when it starts. */
export interface BindingStartContext {
  /** The runtime process's owner id: label every resource with it (`pai.owner`). */
  ownerId: string;
}

/** What a binding's reaper may and may not remove. */
export interface ReapContext {
  /** Resource ids named by leases of live owners (any process): never remove these. */
  keepResourceIds: readonly string[];
  /**
   * Owners this store knows to be dead (their heartbeats stopped). Only their resources are reaped: an owner the
   * store does not know may be a live process of another app sharing the engine.
   */
  deadOwnerIds: ReadonlySet<string>;
  /**
   * Resources of leases the runtime ended without reattaching them (a dead owner's stale lease, or one whose
   * resource failed to reattach): remove each that still exists, whatever owner it is labelled with. A resource
   * taken over from another process keeps its creator's label, and that creator may be gone.
   */
  orphanResourceIds?: readonly string[];
}

/**
 * How a capability is provided, supplied at `createAgentRuntime({ capabilities })`.
 * `@pai/sandbox`'s `dockerSandbox(...)` is one.
 */
export interface CapabilityBinding<FACADE = unknown> {
  readonly kind: "pai.capability-binding";
  /** The capability's name (`sandbox`). */
  readonly capability: string;
  /** Overrides the capability's default lifetime. */
  readonly lifetime?: CapabilityLifetime | undefined;
  /** Idle time after which `thread` and `user` leases are released. @default 30 minutes */
  readonly idleTtlMs?: number | undefined;
  /**
   * Prepares shared resources (warms a pool). The runtime calls it once, before the first provisioning, with
   * its owner id. `context` is absent only when an app or a test warms a binding by hand.
   */
  start?(context?: BindingStartContext): Promise<void>;
  provision(request: ProvisionRequest): Promise<ProvisionedResource<FACADE>>;
  /**
   * Reconnects to a resource recorded on a lease before a restart; `undefined` when it is gone. A rejection (it is
   * there, but could not be reconnected) goes to the runtime's `onBackgroundError`; the lease then gets a new one.
   */
  reattach?(lease: LeaseRecord, signal: AbortSignal): Promise<ProvisionedResource<FACADE> | undefined>;
  /**
   * Removes the resources on this binding's engine whose owner is known dead and that no kept lease names (a
   * dead process's containers). Never one of any other owner. Called at start and then periodically.
   */
  reapUnowned?(context: ReapContext): Promise<void>;
  /**
   * Removes this process's own resources: idle warm ones and those whose leases were released. Never one
   * recorded on a lease handed over to, or kept for a thread by, another process (the runtime releases the
   * leases it owns before closing the binding).
   */
  close(): Promise<void>;
}
