import { PaiError } from "../errors/pai-error.ts";
import type { PendingActionRecord } from "../threads/thread-store.ts";

/** What an answer names of the call it answers; it must match the pending action exactly. */
export interface AnswerBinding {
  toolCallId: string;
  toolId: string;
  /** The hash of the call's input as the client saw it (`hashInput`). */
  inputHash: string;
}

/**
 * Refuses an answer bound to another call than `action`'s — another tool call, tool id or input — with
 * `STALE_ANSWER` (409): the client answered something it was not asked.
 */
export function assertAnswerBound(action: PendingActionRecord, binding: AnswerBinding): void {
  if (
    action.toolCallId === binding.toolCallId &&
    action.toolId === binding.toolId &&
    action.inputHash === binding.inputHash
  )
    return;
  throw new PaiError(
    "STALE_ANSWER",
    `the answer does not match pending action "${action.id}" (tool call, tool id or input differ)`,
    { details: { actionId: action.id } },
  );
}
