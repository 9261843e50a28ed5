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
   * The facade as one run sees it: every operation is also stopped by `signal` (the run's Stop), so a tool
   * that passes no signal of its own is still cancelled with its run. `report` streams a network connection the
   * resource made on the run's behalf as a capability status event (`status: "connection"`).
   */
  bind?(scope: { signal: AbortSignal; report?: (event: CapabilityConnectionEvent) => void }): FACADE;
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
  /** Prepares shared resources (warms a pool). Called once, before the first provisioning. */
  start?(): Promise<void>;
  provision(request: ProvisionRequest): Promise<ProvisionedResource<FACADE>>;
  /** Reconnects to a resource recorded on a lease before a restart; `undefined` when it is gone. */
  reattach?(lease: LeaseRecord, signal: AbortSignal): Promise<ProvisionedResource<FACADE> | undefined>;
  /** Removes resources this binding made that no lease owns. */
  reapUnowned?(keepResourceIds: string[]): Promise<void>;
  /** Frees everything the binding holds. */
  close(): Promise<void>;
}
