import type { PublicPendingAction } from "@pai/core";
import type { PaiToolPart } from "./is-pai-tool-part.ts";

/** Where a call stands, as a badge shows it. */
export interface ToolCallStatus {
  /** Stable key, also set as `data-status` on the card. */
  key: "preparing" | "running" | "needs-approval" | "waiting" | "approved" | "denied" | "done" | "failed";
  label: string;
}

/** The status of a call from its part and the action it waits on. */
export function toolCallStatus(
  part: PaiToolPart,
  pendingAction: PublicPendingAction | undefined,
): ToolCallStatus {
  if (pendingAction) {
    return pendingAction.kind === "client"
      ? { key: "waiting", label: "Waiting for the app" }
      : { key: "needs-approval", label: "Needs approval" };
  }
  switch (part.state) {
    case "input-streaming":
      return { key: "preparing", label: "Preparing" };
    case "input-available":
      return { key: "running", label: "Running" };
    case "approval-requested":
      return { key: "needs-approval", label: "Needs approval" };
    case "approval-responded":
      return (part.approval as { approved?: boolean } | undefined)?.approved === false
        ? { key: "denied", label: "Denied" }
        : { key: "approved", label: "Approved" };
    case "output-available":
      return { key: "done", label: "Done" };
    case "output-error":
      return { key: "failed", label: "Failed" };
    case "output-denied":
      return { key: "denied", label: "Denied" };
  }
}
