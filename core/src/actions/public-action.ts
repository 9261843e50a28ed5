import type { PendingActionRecord } from "../threads/thread-store.ts";

/** A pending action as clients see it (`data-pai-action` parts, HTTP): what to show and how to answer. */
export interface PublicPendingAction {
  actionId: string;
  threadId: string;
  runId: string;
  toolCallId: string;
  toolId: string;
  toolName: string;
  inputHash: string;
  kind: PendingActionRecord["kind"];
  name: string | undefined;
  payload: unknown;
  input: unknown;
  status: PendingActionRecord["status"];
  createdAt: number;
  /**
   * Where the call that waits is: `[toolName]` for the model's own call; below it, the names from the top-level
   * call down (`["code", "approveRefund"]`; a subagent adds its agent id: `["delegate", "writer", "refund"]`).
   */
  path: string[];
  /** For a call below the top-level one: its tool id and input (`toolId` and `input` are the top-level call's). */
  inner?: { toolId: string; input: unknown };
}

export function publicAction(action: PendingActionRecord): PublicPendingAction {
  return {
    actionId: action.id,
    threadId: action.threadId,
    runId: action.runId,
    toolCallId: action.toolCallId,
    toolId: action.toolId,
    toolName: action.toolName,
    inputHash: action.inputHash,
    kind: action.kind,
    name: action.name,
    payload: action.payload,
    input: action.input,
    status: action.status,
    createdAt: action.createdAt,
    path: action.inner?.path ?? [action.toolName],
    ...(action.inner ? { inner: { toolId: action.inner.toolId, input: action.inner.input } } : {}),
  };
}
