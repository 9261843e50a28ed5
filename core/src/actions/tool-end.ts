/**
 * Why PAI ended a tool call without its output:
 * - `cancelled`: the run was stopped (user Stop, or the run failed) while the call ran;
 * - `interrupted`: the process running it died (a crash, kill -9); a live process closed the call;
 * - `timeout`: the run's deadline passed while the call ran;
 * - `provision-failed`: a capability the call needed could not be provisioned (e.g. `POOL_EXHAUSTED`).
 */
export type ToolEndReason = "cancelled" | "interrupted" | "timeout" | "provision-failed";

/** How PAI ended a tool call. It rides on the tool part (`state: "output-error"`) as `toolMetadata.paiEnd`. */
export interface ToolEnd {
  reason: ToolEndReason;
  /** The error code behind it, e.g. `POOL_EXHAUSTED`. */
  code?: string;
  /** Facts to show, e.g. the pool's numbers for `POOL_EXHAUSTED`: `{ max, borrowed, pending, waitedMs }`. */
  details?: Record<string, unknown>;
}

const reasons: ReadonlySet<string> = new Set<ToolEndReason>([
  "cancelled",
  "interrupted",
  "timeout",
  "provision-failed",
]);

/** The `toolMetadata` key PAI records a {@link ToolEnd} under. */
export const TOOL_END_KEY = "paiEnd";

/**
 * The end PAI recorded on a tool part, or `undefined` for any other part (one that ended normally, or failed on
 * its own). Works on stored and streamed parts alike; safe in the browser (`@pai/core/client`).
 * @example
 * const end = toolEndOf(part);
 * if (end?.reason === "cancelled") return <span>Stopped</span>;
 * if (end?.code === "POOL_EXHAUSTED") return <span>No sandbox free ({String(end.details?.max)} in use)</span>;
 */
export function toolEndOf(part: unknown): ToolEnd | undefined {
  if (typeof part !== "object" || part === null) return undefined;
  const record = part as { state?: unknown; toolMetadata?: unknown };
  if (record.state !== "output-error") return undefined;
  const metadata = record.toolMetadata;
  if (typeof metadata !== "object" || metadata === null) return undefined;
  const end = (metadata as Record<string, unknown>)[TOOL_END_KEY];
  if (typeof end !== "object" || end === null) return undefined;
  const { reason, code, details } = end as Record<string, unknown>;
  if (typeof reason !== "string" || !reasons.has(reason)) return undefined;
  return {
    reason: reason as ToolEndReason,
    ...(typeof code === "string" ? { code } : {}),
    ...(typeof details === "object" && details !== null && !Array.isArray(details)
      ? { details: details as Record<string, unknown> }
      : {}),
  };
}

/** What the model and the card read (`errorText`) for a call PAI ended. */
export function toolEndMessage(end: ToolEnd, message?: string): string {
  switch (end.reason) {
    case "cancelled":
      return "The run was stopped before this tool call finished.";
    case "interrupted":
      return "The process running this tool call stopped before it finished.";
    case "timeout":
      return "The run timed out before this tool call finished.";
    case "provision-failed":
      return message ?? "A resource this tool needs could not be provisioned.";
  }
}
