import type { CapabilityLifetime } from "../threads/thread-store.ts";
import type { CapabilityConnectionEvent } from "./capability-binding.ts";

/**
 * Provisioning progress of one lease, its wake from hibernation, and the network connections its resource made
 * during the run, as the run streams them (`data-pai-capability` parts).
 */
export interface CapabilityStatusEvent {
  capability: string;
  lifetime: CapabilityLifetime;
  /**
   * `woken`: the resource had hibernated while idle and was started again for this call (`durationMs` the wait);
   * its files are as they were, processes started before are gone. `restarted`: it had stopped outside PAI's wish
   * (`reason` says how) and was started again for this call, its files kept and its processes gone (or a new
   * resource took its files over). The model sees both from the next turn on.
   */
  status: "provisioning" | "ready" | "failed" | "connection" | "woken" | "restarted";
  resourceId?: string;
  durationMs?: number;
  /** Why it failed, safe to show (the code and the numbers, e.g. the pool's for `POOL_EXHAUSTED`). */
  error?: string;
  /** With `status: "restarted"`: why the resource had stopped, and how it came back. */
  reason?: string;
  /** The failure's error code, e.g. `POOL_EXHAUSTED`. */
  code?: string;
  /** The failure's numbers, e.g. `{ max, borrowed, pending, waitedMs }`. */
  details?: Record<string, unknown>;
  /** With `status: "connection"`: the connection. */
  connection?: CapabilityConnectionEvent;
}
