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
  /**
   * For a call below the top-level one: its tool id and input (`toolId` and `input` are the top-level call's), and,
   * when it is a subagent's, the subagent and its own thread (suspended until this action is answered).
   */
  inner?: { toolId: string; input: unknown; subagent?: { agentId: string; threadId: string } };
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
    ...(action.inner ? { inner: innerOf(action, action.inner) } : {}),
  };
}

function innerOf(
  action: PendingActionRecord,
  inner: NonNullable<PendingActionRecord["inner"]>,
): NonNullable<PublicPendingAction["inner"]> {
  const waiting = action.journal?.find((entry) => entry.key === inner.key && entry.state !== "settled");
  const subagent = waiting && waiting.state !== "settled" ? waiting.subagent : undefined;
  return {
    toolId: inner.toolId,
    input: inner.input,
    ...(subagent ? { subagent: { agentId: subagent.agentId, threadId: subagent.threadId } } : {}),
  };
}
