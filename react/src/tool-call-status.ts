import type { PendingActionAnswer, PublicPendingAction, RunStatus } from "@pai/core";
import type { PaiToolPart } from "./is-pai-tool-part.ts";
import { toolCallEnd } from "./tool-call-end.ts";

/** Where a call stands, as a badge shows it. */
export interface ToolCallStatus {
  /** Stable key, also set as `data-status` on the card. */
  key:
    | "preparing"
    | "starting"
    | "running"
    | "needs-approval"
    | "waiting"
    | "approved"
    | "denied"
    | "done"
    | "stopped"
    | "failed";
  /** The badge's text. */
  label: string;
  /** Why the call failed or was denied, when known. */
  reason?: string;
}

/** An answer this page sent to the call's pending action. */
export interface SentAnswer {
  answer: PendingActionAnswer;
  /** The server took it: the call goes on (a continuation is running). */
  accepted: boolean;
}

/** What {@link toolCallStatus} reads besides the part. */
export interface ToolCallStatusOptions {
  /** The action the call waits on, while it is pending. */
  pendingAction?: PublicPendingAction | undefined;
  /**
   * The call's latest action once it is settled, while the part still waits for its result (the answer's
   * continuation has not reached this client, or a new message cancelled the action).
   */
  settledAction?: PublicPendingAction | undefined;
  /** The answer sent to that action, until the call moves on. */
  sent?: SentAnswer | undefined;
  /** How the run that wrote the call ended (see {@link toolCallEnd}); `undefined` when unknown. */
  runStatus?: RunStatus | undefined;
  /** Capabilities the run is starting right now (`startingCapabilitiesOf(message)`). */
  starting?: readonly string[] | undefined;
}

/**
 * The status of a call: waiting for a person (`needs-approval`, or `waiting` on a client tool), then, once
 * answered, `approved` until the server takes the answer and `running` (or `starting` while the run provisions a
 * capability such as the sandbox) until it ends `done`, `denied`, `stopped` (Stop) or `failed` with its reason.
 * @example
 * toolCallStatus(part, { pendingAction, runStatus: "cancelled" }) // { key: "stopped", label: "Stopped" } for an open call
 */
export function toolCallStatus(part: PaiToolPart, options: ToolCallStatusOptions = {}): ToolCallStatus {
  const { pendingAction, settledAction, sent, runStatus, starting = [] } = options;
  const running = (): ToolCallStatus =>
    starting.length > 0
      ? { key: "starting", label: `Starting ${starting.join(", ")}` }
      : { key: "running", label: "Running" };
  if (pendingAction) {
    if (sent) return statusAfterAnswer(sent, running);
    return pendingAction.kind === "client"
      ? { key: "waiting", label: "Waiting for the app" }
      : { key: "needs-approval", label: "Needs approval" };
  }
  if (settledAction && WAITING.has(part.state)) return statusOfSettled(part, settledAction, running);
  const end = toolCallEnd(part, runStatus);
  if (end) {
    return {
      key: end.key,
      label: end.key === "stopped" ? "Stopped" : "Failed",
      ...(end.reason ? { reason: end.reason } : {}),
    };
  }
  switch (part.state) {
    case "input-streaming":
      return { key: "preparing", label: "Preparing" };
    case "input-available":
      return running();
    case "approval-requested":
      return { key: "needs-approval", label: "Needs approval" };
    case "approval-responded":
      return (part.approval as { approved?: boolean } | undefined)?.approved === false
        ? denied(part)
        : { key: "approved", label: "Approved" };
    case "output-available":
      return { key: "done", label: "Done" };
    case "output-error":
      return { key: "failed", label: "Failed", ...(part.errorText ? { reason: part.errorText } : {}) };
    case "output-denied":
      return denied(part);
  }
}

/** The states of a part that still waits for its result. */
const WAITING: ReadonlySet<string> = new Set(["input-available", "approval-requested", "approval-responded"]);

/** Where a call stands whose action was settled while its part still waits: as its answer says. */
function statusOfSettled(
  part: PaiToolPart,
  action: PublicPendingAction,
  running: () => ToolCallStatus,
): ToolCallStatus {
  switch (action.status) {
    case "denied":
      return denied(part);
    case "cancelled":
      return { key: "stopped", label: "Cancelled" };
    case "failed":
      return { key: "failed", label: "Failed" };
    default:
      return running();
  }
}

function statusAfterAnswer(sent: SentAnswer, running: () => ToolCallStatus): ToolCallStatus {
  switch (sent.answer.type) {
    case "resume":
      return sent.accepted ? running() : { key: "approved", label: "Approved" };
    case "success":
    case "skip":
      return running();
    case "deny":
      return {
        key: "denied",
        label: "Denied",
        ...(sent.answer.reason ? { reason: sent.answer.reason } : {}),
      };
    case "cancel":
      return { key: "stopped", label: "Cancelled" };
    case "fail":
      return { key: "failed", label: "Failed", reason: sent.answer.message };
  }
}

/**
 * A denial and its reason. A streamed `tool-output-denied` chunk leaves the part without an `approval` object
 * (the stored thread records `approval-responded` with one), so both shapes are read.
 */
function denied(part: PaiToolPart): ToolCallStatus {
  const reason = (part.approval as { reason?: string } | undefined)?.reason;
  return { key: "denied", label: "Denied", ...(reason ? { reason } : {}) };
}
