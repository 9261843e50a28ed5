import type { PendingActionAnswer, PublicPendingAction } from "@pai/core";
import { PaiResponseError } from "./pai-response-error.ts";

/** What {@link answerAction} accepts. */
export interface AnswerActionOptions {
  /** Base path of PAI's HTTP handler. @default "/api" */
  api?: string;
  /** The thread the action belongs to. @default action.threadId */
  threadId?: string;
  /** The action to answer (from a `data-pai-action` part or `GET /threads/:id`); the answer is bound to it. */
  action: Pick<PublicPendingAction, "actionId" | "toolCallId" | "toolId" | "inputHash"> & {
    threadId?: string;
  };
  answer: PendingActionAnswer;
  /**
   * Ask for the continuation as a UI message stream (`Accept: text/event-stream`), returned as `stream`.
   * @default false
   */
  stream?: boolean;
  /** Untrusted data for the agent's resolvers. */
  clientData?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** @default globalThis.fetch */
  fetch?: typeof globalThis.fetch;
}

/** What answering did. */
export type AnswerActionResult =
  | {
      /** The answer was taken. */
      status: "accepted";
      /** The continuation run, when the answer let the conversation go on (no other action waits). */
      runId: string | null;
      /** Actions of the thread still waiting (unknown, `undefined`, when the continuation is streamed). */
      waiting: number | undefined;
      /** The continuation's UI message stream (SSE bytes), with `stream: true` and a continuation. */
      stream: ReadableStream<Uint8Array> | undefined;
    }
  | {
      /** The action had been settled before: nothing happened. */
      status: "already-settled";
      runId: null;
      waiting: undefined;
      stream: undefined;
    };

/**
 * Answers a pending action: `POST {api}/threads/:threadId/actions/:actionId`. Approve a suspended call with
 * `{ type: "resume", resume }`, refuse it with `{ type: "deny", reason }`. Rejects with a
 * {@link PaiResponseError} on a 4xx/5xx (`STALE_ANSWER`, `TOOL_DISABLED`, ...).
 * @example
 * await answerAction({ action, answer: { type: "resume", resume: { approved: true } } });
 */
export async function answerAction(options: AnswerActionOptions): Promise<AnswerActionResult> {
  const { action, answer } = options;
  const api = (options.api ?? "/api").replace(/\/$/, "");
  const threadId = options.threadId ?? action.threadId;
  if (!threadId) throw new TypeError("answerAction: pass threadId (the action carries none)");
  const url = `${api}/threads/${encodeURIComponent(threadId)}/actions/${encodeURIComponent(action.actionId)}`;
  const response = await (options.fetch ?? globalThis.fetch)(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(options.stream ? { accept: "text/event-stream" } : {}),
      ...options.headers,
    },
    body: JSON.stringify({
      toolCallId: action.toolCallId,
      toolId: action.toolId,
      inputHash: action.inputHash,
      answer,
      ...(options.clientData !== undefined ? { clientData: options.clientData } : {}),
    }),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  if (!response.ok) throw await PaiResponseError.fromResponse(response);
  if ((response.headers.get("content-type") ?? "").includes("text/event-stream") && response.body) {
    return {
      status: "accepted",
      runId: response.headers.get("x-pai-run-id"),
      waiting: undefined,
      stream: response.body,
    };
  }
  const body = (await response.json()) as { status: string; runId?: string | null; waiting?: number };
  if (body.status === "already-settled") {
    return { status: "already-settled", runId: null, waiting: undefined, stream: undefined };
  }
  return { status: "accepted", runId: body.runId ?? null, waiting: body.waiting, stream: undefined };
}
