import type { PublicPendingAction } from "@pai/core";
import type { UIMessage } from "ai";

/**
 * The pending actions (`data-pai-action` parts) of a message, latest state of each. With `toolCallId`, only
 * that call's. Includes settled ones: check `status === "pending"` for those still waiting.
 */
export function pendingActionsOf(message: UIMessage, toolCallId?: string): PublicPendingAction[] {
  const byId = new Map<string, PublicPendingAction>();
  for (const part of message.parts) {
    if (part.type !== "data-pai-action") continue;
    const action = (part as { data?: unknown }).data;
    if (!isPublicAction(action)) continue;
    if (toolCallId !== undefined && action.toolCallId !== toolCallId) continue;
    byId.set(action.actionId, action);
  }
  return [...byId.values()];
}

/** The action a call waits on (status `pending`), if any. */
export function pendingActionFor(message: UIMessage, toolCallId: string): PublicPendingAction | undefined {
  return pendingActionsOf(message, toolCallId).find((action) => action.status === "pending");
}

function isPublicAction(value: unknown): value is PublicPendingAction {
  if (typeof value !== "object" || value === null) return false;
  const record = value as Record<string, unknown>;
  return (
    typeof record.actionId === "string" &&
    typeof record.toolCallId === "string" &&
    typeof record.status === "string"
  );
}
