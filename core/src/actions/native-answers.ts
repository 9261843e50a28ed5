import type { UIMessage, UIMessageChunk } from "ai";
import { PaiError } from "../errors/pai-error.ts";
import type { PendingActionRecord } from "../threads/thread-store.ts";
import { type AnswerBinding, assertAnswerBound } from "./answer-binding.ts";
import { hashInput } from "./input-hash.ts";
import type { PendingActionAnswer } from "./pending-action-answer.ts";
import { publicAction } from "./public-action.ts";

/** An answer a `useChat` client put on a tool part, bound to the stored action it answers. */
export interface NativeAnswer extends AnswerBinding {
  action: PendingActionRecord;
  answer: PendingActionAnswer;
}

type ClientToolPart = {
  type: string;
  toolCallId: string;
  state?: unknown;
  input?: unknown;
  output?: unknown;
  errorText?: unknown;
  preliminary?: unknown;
  toolMetadata?: unknown;
  approval?: unknown;
};

/**
 * The answers in the last message of a `useChat` request, which is the assistant's: the AI SDK's approval
 * responses (`addToolApprovalResponse`: a part in state `approval-responded` whose approval id is a pending
 * action's id) and client tool outputs (`addToolOutput`: `output-available` or `output-error` on a call that
 * waits for the client). Only these parts are read — the rest of the message is the client's copy and is never
 * trusted — and each is matched against the thread's stored `actions` and bound as PAI's action route binds an
 * answer: to the call id, the tool id (`toolMetadata.paiToolId`) and the hash of the input on the part.
 *
 * An approval becomes `{ type: "resume", resume: { approved: true } }` (with `reason` when one was given), a
 * denial `{ type: "deny", reason }`; a client tool's output `{ type: "success", output }`, its error
 * `{ type: "fail", message }`. Answers to settled actions are returned too (answering them is a no-op).
 * Throws `UNKNOWN_ACTION` for an approval id the thread does not have, `STALE_ANSWER` for a part whose call, tool
 * id or input differ from its action's, `BAD_REQUEST` for an approval given to a call that waits for an output.
 */
export function nativeAnswersOf(message: UIMessage, actions: readonly PendingActionRecord[]): NativeAnswer[] {
  const answers = new Map<string, NativeAnswer>();
  for (const part of toolParts(message)) {
    const found = answerOf(part, actions);
    if (!found || answers.has(found.action.id)) continue;
    const binding: AnswerBinding = {
      toolCallId: part.toolCallId,
      toolId: toolIdOf(part),
      inputHash: hashInput(part.input),
    };
    assertAnswerBound(found.action, binding);
    answers.set(found.action.id, { ...binding, action: found.action, answer: found.answer });
  }
  return [...answers.values()];
}

function answerOf(
  part: ClientToolPart,
  actions: readonly PendingActionRecord[],
): { action: PendingActionRecord; answer: PendingActionAnswer } | undefined {
  if (part.state === "approval-responded") {
    const approval = part.approval as { id?: unknown; approved?: unknown; reason?: unknown } | undefined;
    if (typeof approval?.id !== "string" || typeof approval.approved !== "boolean") return undefined;
    const action = actions.find((candidate) => candidate.id === approval.id);
    if (!action) {
      throw new PaiError("UNKNOWN_ACTION", `no pending action "${approval.id}" on this thread`, {
        details: { actionId: approval.id },
      });
    }
    if (action.kind !== "suspend") {
      throw new PaiError(
        "BAD_REQUEST",
        `pending action "${action.id}" waits for the tool's output (addToolOutput), not an approval`,
        { details: { actionId: action.id } },
      );
    }
    const reason = typeof approval.reason === "string" ? approval.reason : undefined;
    const answer: PendingActionAnswer = approval.approved
      ? { type: "resume", resume: { approved: true, ...(reason !== undefined ? { reason } : {}) } }
      : { type: "deny", ...(reason !== undefined ? { reason } : {}) };
    return { action, answer };
  }
  const output = part.state === "output-available" && part.preliminary !== true;
  if (!output && part.state !== "output-error") return undefined;
  // Only a call that waits for the client takes its output; any other result is the server's own, already stored.
  const action = actions.findLast(
    (candidate) => candidate.kind === "client" && candidate.toolCallId === part.toolCallId,
  );
  if (!action) return undefined;
  const answer: PendingActionAnswer = output
    ? { type: "success", output: part.output }
    : {
        type: "fail",
        message: typeof part.errorText === "string" ? part.errorText : "The client tool failed.",
      };
  return { action, answer };
}

/**
 * The chunks that bring a client's copy of answered calls to their stored state, as the reply to a request whose
 * answers were all settled before (a replay: nothing runs). Each call's part takes its stored result — a denial
 * ends as `output-denied`, so a client that sends on approval responses does not send it again — and each action's
 * `data-pai-action` part its stored status.
 * @param messageId the client's message holding the calls (the stream continues it)
 * @param stored the thread as stored
 */
export function catchUpChunks(options: {
  messageId: string;
  answers: readonly NativeAnswer[];
  stored: readonly UIMessage[];
  actions: readonly PendingActionRecord[];
}): UIMessageChunk[] {
  const chunks: UIMessageChunk[] = [{ type: "start", messageId: options.messageId }];
  for (const { action } of options.answers) {
    const part = storedPart(options.stored, action.toolCallId);
    if (part) chunks.push(...resultChunks(part));
    const current = options.actions.find((candidate) => candidate.id === action.id) ?? action;
    chunks.push({ type: "data-pai-action", id: current.id, data: publicAction(current) } as UIMessageChunk);
  }
  chunks.push({ type: "finish" });
  return chunks;
}

function resultChunks(part: ClientToolPart): UIMessageChunk[] {
  const { toolCallId } = part;
  switch (part.state) {
    case "output-available":
      return [{ type: "tool-output-available", toolCallId, output: part.output }];
    case "output-error":
      return [
        {
          type: "tool-output-error",
          toolCallId,
          errorText: typeof part.errorText === "string" ? part.errorText : "",
          ...(part.toolMetadata ? { toolMetadata: part.toolMetadata as never } : {}),
        },
      ];
    case "approval-responded": {
      const approval = part.approval as { id?: unknown; approved?: unknown; reason?: unknown } | undefined;
      if (typeof approval?.id !== "string" || approval.approved !== false) return [];
      const reason = typeof approval.reason === "string" ? approval.reason : undefined;
      return [
        { type: "tool-approval-request", approvalId: approval.id, toolCallId },
        {
          type: "tool-approval-response",
          approvalId: approval.id,
          approved: false,
          ...(reason !== undefined ? { reason } : {}),
        },
        { type: "tool-output-denied", toolCallId },
      ];
    }
    default:
      return [];
  }
}

function toolParts(message: UIMessage): ClientToolPart[] {
  const parts: unknown = (message as { parts?: unknown }).parts;
  if (!Array.isArray(parts)) return [];
  return parts.filter(
    (part): part is ClientToolPart =>
      typeof part === "object" &&
      part !== null &&
      typeof part.toolCallId === "string" &&
      typeof part.type === "string" &&
      (part.type.startsWith("tool-") || part.type === "dynamic-tool"),
  );
}

function storedPart(messages: readonly UIMessage[], toolCallId: string): ClientToolPart | undefined {
  for (let m = messages.length - 1; m >= 0; m--) {
    const part = toolParts(messages[m]!).find((candidate) => candidate.toolCallId === toolCallId);
    if (part) return part;
  }
  return undefined;
}

function toolIdOf(part: ClientToolPart): string {
  const metadata = part.toolMetadata as { paiToolId?: unknown } | undefined;
  return typeof metadata?.paiToolId === "string" ? metadata.paiToolId : "";
}
