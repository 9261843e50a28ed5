import type { RunStatus } from "@pai/core";
import { type ToolEnd, toolEndOf } from "@pai/core/client";
import type { PaiToolPart } from "./is-pai-tool-part.ts";

/** How a call ended without a result of its own. */
export interface ToolCallEnd {
  /** `stopped`: the run was stopped (or cut off) before the call finished; `failed`: the call failed. */
  key: "stopped" | "failed";
  /** Why, in words, when known. */
  reason: string | undefined;
  /** Why the runtime ended the call, when it did (`toolEndOf(part)`). */
  end: ToolEnd | undefined;
}

/**
 * How a call ended when it has no result. An `output-error` part the runtime ended carries why
 * (`toolEndOf(part)`): `cancelled` (Stop) is stopped; `interrupted` (its process died) is stopped, saying so;
 * `timeout` and `provision-failed` are failed, with the part's error text as the reason. Any other
 * `output-error` failed on its own, with its error text. A part still open (`input-streaming`, `input-available`)
 * although its run is over reads from the run's status: a run that ended `cancelled` stopped it, one that failed
 * failed it, any other ended run cut it off.
 * Returns `undefined` for calls with a result, calls still running, and calls of a suspended run (they wait).
 * @param runStatus how the run that wrote the call ended (`undefined` when unknown)
 * @example
 * const end = toolCallEnd(part, runStatus);
 * if (end?.end?.code === "POOL_EXHAUSTED") return <p>No sandbox free right now.</p>;
 */
export function toolCallEnd(part: PaiToolPart, runStatus: RunStatus | undefined): ToolCallEnd | undefined {
  if (part.state === "output-error") {
    const end = toolEndOf(part);
    const reason = part.errorText || undefined;
    switch (end?.reason) {
      case "cancelled":
        return { key: "stopped", reason: undefined, end };
      case "interrupted":
        return { key: "stopped", reason, end };
      default:
        return { key: "failed", reason, end };
    }
  }
  const open = part.state === "input-streaming" || part.state === "input-available";
  if (!open || runStatus === undefined || runStatus === "running" || runStatus === "suspended")
    return undefined;
  return runStatus === "failed"
    ? { key: "failed", reason: "The run failed before the call finished.", end: undefined }
    : { key: "stopped", reason: undefined, end: undefined };
}
