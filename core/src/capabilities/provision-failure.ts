import type { ToolEnd } from "../actions/tool-end.ts";

/** A capability that could not be provisioned, as the model, the UI and the status events see it. */
export interface ProvisionFailure {
  /** Safe to show the model and the user: the capability, the error code and the numbers, never internals. */
  message: string;
  end: ToolEnd;
}

/**
 * The facts a failure may show (the pool's `POOL_EXHAUSTED` numbers, a container's restarts and why it stopped for
 * `CONTAINER_LOST`); nothing else is passed on.
 */
const SHOWN_DETAILS = [
  "max",
  "borrowed",
  "pending",
  "waitedMs",
  "acquireTimeoutMs",
  "holder",
  "restarts",
  "withinMs",
  "reason",
] as const;

const failures = new WeakMap<object, ProvisionFailure>();

/** Records that `error` is why `capability` could not be provisioned; returns what it means for a tool call. */
export function markProvisionFailure(error: unknown, capability: string): ProvisionFailure {
  const failure = describe(error, capability);
  if (typeof error === "object" && error !== null) failures.set(error, failure);
  return failure;
}

/** The provisioning failure behind `error` (or one of its causes), if it is one. */
export function provisionFailureOf(error: unknown): ProvisionFailure | undefined {
  let current = error;
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const failure = failures.get(current);
    if (failure) return failure;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function describe(error: unknown, capability: string): ProvisionFailure {
  const { code, details } = (typeof error === "object" && error !== null ? error : {}) as {
    code?: unknown;
    details?: unknown;
  };
  const shown: Record<string, unknown> = { capability };
  if (typeof details === "object" && details !== null) {
    for (const key of SHOWN_DETAILS) {
      const value = (details as Record<string, unknown>)[key];
      if (typeof value === "number" || typeof value === "string") shown[key] = value;
    }
  }
  const end: ToolEnd = {
    reason: "provision-failed",
    ...(typeof code === "string" ? { code } : {}),
    details: shown,
  };
  return { message: messageOf(capability, end.code, shown), end };
}

function messageOf(capability: string, code: string | undefined, details: Record<string, unknown>): string {
  if (code === "POOL_EXHAUSTED") {
    const numbers = [
      details.borrowed !== undefined && details.max !== undefined
        ? `${details.borrowed} of ${details.max} in use`
        : undefined,
      details.pending !== undefined ? `${details.pending} waiting` : undefined,
      details.waitedMs !== undefined ? `waited ${details.waitedMs} ms` : undefined,
    ].filter((part) => part !== undefined);
    const facts = numbers.length > 0 ? `: ${numbers.join(", ")}` : "";
    return `No ${capability} is available right now (POOL_EXHAUSTED${facts}). Try again later.`;
  }
  if (code === "CONTAINER_LOST" && details.restarts !== undefined && details.withinMs !== undefined) {
    const why = details.reason !== undefined ? ` (${details.reason})` : "";
    return `The ${capability} stopped again${why} after ${details.restarts} restarts within ${Math.round(Number(details.withinMs) / 1000)} s and is not started again for now (CONTAINER_LOST). Try again later.`;
  }
  if (code === "CAPABILITY_BUSY") {
    return `The ${capability} of this conversation is in use by another process (CAPABILITY_BUSY). Try again later.`;
  }
  return `The ${capability} could not be provisioned${code ? ` (${code})` : ""}.`;
}
