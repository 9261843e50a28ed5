import type { CapabilityStatusEvent } from "./capability-status-event.ts";

/** Who is asking: the ids a lease key is chosen from. */
export interface LeaseScope {
  runId: string;
  threadId: string;
  identityKey: string;
  signal: AbortSignal;
  /** Told when this scope starts provisioning a resource and when it is ready (or failed). */
  onStatus?: (event: CapabilityStatusEvent) => void;
}
