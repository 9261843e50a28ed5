import type { UIMessage } from "ai";
import type { CallOutcome } from "../runtime/tool-executor.ts";

/** The change a settled call makes to its tool part. */
export type ToolPartUpdate = {
  toolCallId: string;
  actionId: string;
  outcome: Exclude<CallOutcome, { type: "pending" }>;
};

type MutableToolPart = Record<string, unknown> & { type: string; toolCallId?: string; state?: string };

/** The tool parts still waiting for a result (`input-available`), in the thread's last assistant message. */
export function waitingToolCallIds(messages: UIMessage[]): string[] {
  const last = messages.findLast((message) => message.role === "assistant");
  if (!last) return [];
  return (last.parts as MutableToolPart[])
    .filter((part) => typeof part.toolCallId === "string" && part.state === "input-available")
    .map((part) => part.toolCallId as string);
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
          ? { ...rest, state: "output-error", errorText: outcome.message }
          : {
              ...rest,
              state: "approval-responded",
              approval: {
                id: update.actionId,
                approved: false,
                ...(outcome.reason !== undefined ? { reason: outcome.reason } : {}),
              },
            };
    return;
  }
}

/** Puts the parts of calls waiting for an answer back to `input-available` (the SDK saw a placeholder result). */
export function awaitAnswers(messages: UIMessage[], toolCallIds: ReadonlySet<string>): void {
  for (const message of messages) {
    const parts = message.parts as MutableToolPart[];
    parts.forEach((part, index) => {
      if (typeof part.toolCallId !== "string" || !toolCallIds.has(part.toolCallId)) return;
      const { output: _output, errorText: _errorText, ...rest } = part;
      parts[index] = { ...rest, state: "input-available" };
    });
  }
}

/** The UI stream chunks that show `update` to a client following the run (the same part state as stored). */
export function toolPartUpdateChunks(update: ToolPartUpdate): Array<Record<string, unknown>> {
  const { outcome } = update;
  switch (outcome.type) {
    case "output":
      return [{ type: "tool-output-available", toolCallId: update.toolCallId, output: outcome.output }];
    case "error":
      return [{ type: "tool-output-error", toolCallId: update.toolCallId, errorText: outcome.message }];
    case "denied":
      return [
        { type: "tool-approval-request", approvalId: update.actionId, toolCallId: update.toolCallId },
        {
          type: "tool-approval-response",
          approvalId: update.actionId,
          approved: false,
          ...(outcome.reason !== undefined ? { reason: outcome.reason } : {}),
        },
      ];
  }
}
