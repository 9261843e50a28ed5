import type { CapabilityLifetime } from "../threads/thread-store.ts";
import type { LeaseScope } from "./lease-scope.ts";
import { markProvisionFailure } from "./provision-failure.ts";

/** Why a scope's resource could not be had, and since when it was tried. */
export interface ProvisionFailureReport {
  capability: string;
  lifetime: CapabilityLifetime;
  error: unknown;
  startedAt: number;
  /** The resource that could not be woken or started again; none when provisioning failed. */
  resourceId?: string;
}

/**
 * Tells the scope that its resource cannot be had (provisioned, woken or started again): a `failed` status, and
 * the error marked so that the call ends telling why (`provision-failed` with the error's code and numbers).
 */
export function reportProvisionFailure(
  scope: LeaseScope,
  { capability, lifetime, error, startedAt, resourceId }: ProvisionFailureReport,
): void {
  const failure = markProvisionFailure(error, capability);
  scope.onStatus?.({
    capability,
    lifetime,
    status: "failed",
    ...(resourceId !== undefined ? { resourceId } : {}),
    durationMs: Date.now() - startedAt,
    error: failure.message,
    ...(failure.end.code !== undefined ? { code: failure.end.code } : {}),
    ...(failure.end.details !== undefined ? { details: failure.end.details } : {}),
  });
}
