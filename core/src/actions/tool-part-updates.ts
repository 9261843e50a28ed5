import type { UIMessage } from "ai";
import type { CallOutcome } from "./call-outcome.ts";
import { TOOL_END_KEY, type ToolEnd, toolEndMessage } from "./tool-end.ts";

/** The change a settled call makes to its tool part. */
export type ToolPartUpdate = {
  toolCallId: string;
  outcome: Exclude<CallOutcome, { type: "pending" }>;
};

type MutableToolPart = Record<string, unknown> & { type: string; toolCallId?: string; state?: string };

/** The parts of calls still without a result: their input streams or is complete. */
const OPEN_STATES: ReadonlySet<unknown> = new Set(["input-streaming", "input-available"]);

/** How a call waiting for an answer is stored: a client tool's as `input-available`, an approval's as requested. */
const WAITING_STATES: ReadonlySet<unknown> = new Set(["input-available", "approval-requested"]);

/**
 * The tool parts still waiting for a result (`input-available`, or `approval-requested` for a suspended call), in
 * the thread's last assistant message.
 */
export function waitingToolCallIds(messages: UIMessage[]): string[] {
  const last = messages.findLast((message) => message.role === "assistant");
  if (!last) return [];
  return (last.parts as MutableToolPart[])
    .filter((part) => typeof part.toolCallId === "string" && WAITING_STATES.has(part.state))
    .map((part) => part.toolCallId as string);
}

/** The calls of `message` without a result, except those in `waiting` (they wait for an answer). */
export function openToolCallIds(message: UIMessage, waiting: ReadonlySet<string>): string[] {
  return (message.parts as MutableToolPart[])
    .filter(
      (part) =>
        typeof part.toolCallId === "string" && OPEN_STATES.has(part.state) && !waiting.has(part.toolCallId),
    )
    .map((part) => part.toolCallId as string);
}

/** The update that ends a call PAI ended (`output-error` with the end's message and the end on the part). */
export function endedCall(toolCallId: string, end: ToolEnd, message?: string): ToolPartUpdate {
  return { toolCallId, outcome: { type: "error", message: toolEndMessage(end, message), end } };
}

/** The tool part with `toolCallId`, searching from the thread's end. */
export function toolPartOf(messages: UIMessage[], toolCallId: string): MutableToolPart | undefined {
  for (let m = messages.length - 1; m >= 0; m--) {
    const part = (messages[m]!.parts as MutableToolPart[]).find((p) => p.toolCallId === toolCallId);
    if (part) return part;
  }
  return undefined;
}

/** `toolMetadata` of a part with `end` recorded on it. */
export function withToolEnd(toolMetadata: unknown, end: ToolEnd): Record<string, unknown> {
  const base = typeof toolMetadata === "object" && toolMetadata !== null ? toolMetadata : {};
  return { ...base, [TOOL_END_KEY]: end };
}

/** Applies `update` to the tool part with its call id (in place). */
export function applyToolPartUpdate(messages: UIMessage[], update: ToolPartUpdate): void {
  for (const message of messages) {
    const parts = message.parts as MutableToolPart[];
    const index = parts.findIndex((part) => part.toolCallId === update.toolCallId);
    if (index < 0) continue;
    const part = parts[index]!;
    const { output: _output, errorText: _errorText, approval: _approval, ...rest } = part;
    const { outcome } = update;
    parts[index] =
      outcome.type === "output"
        ? { ...rest, state: "output-available", output: outcome.output }
        : outcome.type === "error"
          ? {
              ...rest,
              state: "output-error",
              errorText: outcome.message,
              ...(outcome.end ? { toolMetadata: withToolEnd(rest.toolMetadata, outcome.end) } : {}),
            }
          : {
              ...rest,
              state: "approval-responded",
              approval: {
                id: outcome.actionId,
                approved: false,
                ...(outcome.reason !== undefined ? { reason: outcome.reason } : {}),
              },
            };
    return;
  }
}

/**
 * Puts the parts of calls waiting for an answer back in their waiting state (the SDK saw a placeholder result):
 * a call with an approval in `approvals` (tool call id → approval id, the pending action's id) as the AI SDK's
 * `approval-requested` with that approval id, a call already requested as it is, any other (a client tool) as
 * `input-available`.
 */
export function awaitAnswers(
  messages: UIMessage[],
  toolCallIds: ReadonlySet<string>,
  approvals: ReadonlyMap<string, string>,
): void {
  for (const message of messages) {
    const parts = message.parts as MutableToolPart[];
    parts.forEach((part, index) => {
      if (typeof part.toolCallId !== "string" || !toolCallIds.has(part.toolCallId)) return;
      const { output: _output, errorText: _errorText, approval, ...rest } = part;
      const approvalId = approvals.get(part.toolCallId);
      parts[index] =
        approvalId !== undefined
          ? { ...rest, state: "approval-requested", approval: { id: approvalId } }
          : part.state === "approval-requested"
            ? { ...rest, state: "approval-requested", approval }
            : { ...rest, state: "input-available" };
    });
  }
}

/**
 * The UI stream chunks that show `update` to a client following the run (the same part state as stored, given
 * the part as it is after the update).
 */
export function toolPartUpdateChunks(
  update: ToolPartUpdate,
  part: Record<string, unknown> | undefined,
): Array<Record<string, unknown>> {
  const { outcome } = update;
  switch (outcome.type) {
    case "output":
      return [{ type: "tool-output-available", toolCallId: update.toolCallId, output: outcome.output }];
    case "error":
      return [
        {
          type: "tool-output-error",
          toolCallId: update.toolCallId,
          errorText: outcome.message,
          ...(outcome.end && part?.toolMetadata ? { toolMetadata: part.toolMetadata } : {}),
        },
      ];
    case "denied":
      return [
        { type: "tool-approval-request", approvalId: outcome.actionId, toolCallId: update.toolCallId },
        {
          type: "tool-approval-response",
          approvalId: outcome.actionId,
          approved: false,
          ...(outcome.reason !== undefined ? { reason: outcome.reason } : {}),
        },
      ];
  }
}
