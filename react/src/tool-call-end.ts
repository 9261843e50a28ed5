import type { RunStatus } from "@pai/core";
import type { PaiToolPart } from "./is-pai-tool-part.ts";

/** How a call ended without a result of its own. */
export interface ToolCallEnd {
  /** `stopped`: the run was stopped (or cut off) before the call finished; `failed`: the call failed. */
  key: "stopped" | "failed";
  /** Why, in words, when known. */
  reason: string | undefined;
}

/**
 * How a call ended when it has no result: an `output-error` part, or a part still open (`input-streaming`,
 * `input-available`) although its run is over. A run that ended `cancelled` (Stop) stopped its calls; a run
 * that failed failed them; any other ended run (one a dead process left behind) cut them off.
 * Returns `undefined` for calls with a result, calls still running, and calls of a suspended run (they wait).
 *
 * The reason is read from the run's status for now; once the runtime records why it closed each call
 * (cancelled, interrupted, timeout, provision-failed), this is the one place that reads it.
 * @param runStatus how the run that wrote the call ended (`undefined` when unknown)
 */
export function toolCallEnd(part: PaiToolPart, runStatus: RunStatus | undefined): ToolCallEnd | undefined {
  if (part.state === "output-error") {
    return runStatus === "cancelled"
      ? { key: "stopped", reason: undefined }
      : { key: "failed", reason: part.errorText || undefined };
  }
  const open = part.state === "input-streaming" || part.state === "input-available";
  if (!open || runStatus === undefined || runStatus === "running" || runStatus === "suspended")
    return undefined;
  return runStatus === "failed"
    ? { key: "failed", reason: "The run failed before the call finished." }
    : { key: "stopped", reason: undefined };
}
