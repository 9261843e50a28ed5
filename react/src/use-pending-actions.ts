import type { PublicPendingAction } from "@pai/core";
import type { UIMessage } from "ai";
import { useMemo } from "react";
import { pendingActionsOf } from "./pending-actions-of.ts";

/**
 * The actions of `message` still waiting for an answer (approvals, client tools), recomputed when the
 * message changes.
 * @example
 * const pending = usePendingActions(message);
 * if (pending.length > 0) return <p>{pending.length} waiting for you</p>;
 */
export function usePendingActions(message: UIMessage): PublicPendingAction[] {
  return useMemo(() => pendingActionsOf(message).filter((action) => action.status === "pending"), [message]);
}
