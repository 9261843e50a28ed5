import type { PublicPendingAction } from "@pai/core";
import type { UIMessage } from "ai";

/** A pending approval for `deploy` call `c1`, as a `data-pai-action` part carries it. */
export function sampleAction(overrides: Partial<PublicPendingAction> = {}): PublicPendingAction {
  return {
    actionId: "a1",
    threadId: "t1",
    runId: "r1",
    toolCallId: "c1",
    toolId: "deploy.v2",
    toolName: "deploy",
    inputHash: "h1",
    kind: "suspend",
    name: "default",
    payload: { question: "Deploy api?" },
    input: { service: "api" },
    status: "pending",
    createdAt: 1,
    path: ["deploy"],
    ...overrides,
  };
}

/**
 * An assistant message with a suspended `deploy` call (the AI SDK's `approval-requested`, its approval id the
 * action's), two stdout chunks and its pending action.
 */
export function sampleMessage(action: PublicPendingAction = sampleAction()): UIMessage {
  return {
    id: "m2",
    role: "assistant",
    parts: [
      { type: "step-start" },
      { type: "text", text: "Deploying." },
      {
        type: "tool-deploy",
        toolCallId: "c1",
        state: "approval-requested",
        input: { service: "api" },
        toolMetadata: { paiToolId: "deploy.v2" },
        approval: { id: action.actionId },
      },
      {
        type: "data-output",
        data: { toolCallId: "c1", toolId: "deploy.v2", toolName: "deploy", seq: 2, value: "world\n" },
      },
      {
        type: "data-output",
        data: { toolCallId: "c1", toolId: "deploy.v2", toolName: "deploy", seq: 1, value: "hello " },
      },
      {
        type: "data-output",
        data: { toolCallId: "other", toolId: "x", toolName: "x", seq: 3, value: "not mine" },
      },
      { type: "data-pai-action", id: action.actionId, data: action },
    ],
  };
}
