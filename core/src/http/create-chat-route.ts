import { createUIMessageStreamResponse, type UIMessage, type UIMessageChunk } from "ai";
import { z } from "zod";
import { catchUpChunks, nativeAnswersOf } from "../actions/native-answers.ts";
import { PaiError } from "../errors/pai-error.ts";
import type { AgentRun } from "../runtime/agent-run.ts";
import type { AgentRuntime } from "../runtime/create-agent-runtime.ts";
import { parseJsonBody } from "./parse-json-body.ts";

const chatBody = z.object({
  id: z.string().min(1).optional(),
  threadId: z.string().min(1).optional(),
  agentId: z.string().min(1).optional(),
  messages: z.array(z.looseObject({ id: z.string(), role: z.string(), parts: z.array(z.unknown()) })),
  clientData: z.unknown().optional(),
  /** `useChat`'s: what the request is for (`regenerate()` sends `regenerate-message`). */
  trigger: z.enum(["submit-message", "regenerate-message"]).optional(),
  /** `useChat`'s: the message edited (`sendMessage({ text, messageId })`) or regenerated (`regenerate({ messageId })`). */
  messageId: z.string().min(1).optional(),
});

/** What the chat route needs of the handler. */
export interface ChatRouteOptions {
  runtime: AgentRuntime;
  /** The agent for bodies without `agentId`. */
  defaultAgentId: string | undefined;
  maxBodyBytes: number;
}

/**
 * `POST /chat` (see `createPaiHandler`): a `useChat` body — a new user message, an edit of an earlier one, a
 * regeneration, or the assistant's message carrying answers — run and streamed as a UI message stream.
 */
export function createChatRoute(options: ChatRouteOptions) {
  const { runtime, defaultAgentId, maxBodyBytes } = options;

  async function sendMessage(request: Request, identity: unknown): Promise<Response> {
    const body = await parseJsonBody(request, chatBody, maxBodyBytes);
    if (body.trigger === "regenerate-message") return regenerate(body, identity);
    const message = body.messages.at(-1) as unknown as UIMessage | undefined;
    if (message?.role === "assistant") return answerInChat(body, message, identity);
    if (message?.role !== "user")
      throw new PaiError("BAD_REQUEST", "the last message must be the user's new message");
    const threadId = body.threadId ?? body.id;
    if (body.messageId !== undefined) {
      // An edit: the message replaces an earlier one, whatever followed it is dropped.
      if (!threadId) throw new PaiError("BAD_REQUEST", "an edit names its thread: the chat's id");
      await runtime.access.requireThread(threadId, identity);
    }
    return streamRun(
      await runtime.run({
        agentId: agentIdOf(body),
        identity,
        message,
        clientData: body.clientData,
        ...(threadId ? { threadId } : {}),
        ...(body.messageId !== undefined ? { replaceMessageId: body.messageId } : {}),
      }),
    );
  }

  /**
   * `POST /chat` with `trigger: "regenerate-message"` (`useChat`'s `regenerate()`): the answer to a user message is
   * made again. `messageId` names the answer (or the user message itself; without it, the thread's last message);
   * the user message at or before it runs again in its own place, the thread rewound to just before it.
   */
  async function regenerate(body: z.output<typeof chatBody>, identity: unknown): Promise<Response> {
    const threadId = body.threadId ?? body.id;
    if (!threadId) throw new PaiError("BAD_REQUEST", "a regeneration names its thread: the chat's id");
    await runtime.access.requireThread(threadId, identity);
    const stored = await runtime.store.loadMessages(threadId);
    const target = body.messageId ?? stored.at(-1)?.id;
    const index = stored.findIndex((message) => message.id === target);
    const question = stored.slice(0, index + 1).findLast((message) => message.role === "user");
    if (index < 0 || !question)
      throw new PaiError(
        "UNKNOWN_MESSAGE",
        `thread "${threadId}" has no message "${target}" answering a user message (now)`,
        { details: { threadId, messageId: target } },
      );
    return streamRun(
      await runtime.run({
        agentId: agentIdOf(body),
        identity,
        threadId,
        message: question,
        replaceMessageId: question.id,
        clientData: body.clientData,
      }),
    );
  }

  function agentIdOf(body: z.output<typeof chatBody>): string {
    const agentId = body.agentId ?? defaultAgentId;
    if (!agentId)
      throw new PaiError("BAD_REQUEST", "the body names no agentId and the handler has no default agent");
    return agentId;
  }

  function streamRun(run: AgentRun): Response {
    return createUIMessageStreamResponse({
      stream: run.stream,
      headers: { "x-pai-run-id": run.runId, "x-pai-thread-id": run.threadId },
    });
  }

  /**
   * `POST /chat` whose last message is the assistant's: a `useChat` client answering approvals
   * (`addToolApprovalResponse`) and client tools (`addToolOutput`). Only the answer parts are read, matched
   * against the thread's stored actions and bound as the action route binds answers; each goes through
   * `runtime.respond`. Streams the continuation; when none starts, the run already going on the thread (a replay
   * racing the first answer), or else the stored state of the answered calls (a replay: nothing runs).
   * `x-pai-answer` says `accepted` or `already-settled`.
   */
  async function answerInChat(
    body: z.output<typeof chatBody>,
    message: UIMessage,
    identity: unknown,
  ): Promise<Response> {
    const threadId = body.threadId ?? body.id;
    if (!threadId) throw new PaiError("BAD_REQUEST", "answers name their thread: the chat's id");
    await runtime.access.requireThread(threadId, identity);
    const answers = nativeAnswersOf(message, await runtime.store.listPendingActions({ threadId }));
    if (answers.length === 0) {
      throw new PaiError(
        "BAD_REQUEST",
        "the last message is the assistant's but answers nothing: send the user's new message, approval responses or client tool outputs",
      );
    }
    let continuation: AgentRun | undefined;
    let accepted = false;
    for (const { action, answer, ...binding } of answers) {
      const result = await runtime.respond({
        threadId,
        actionId: action.id,
        ...binding,
        answer,
        identity,
        clientData: body.clientData,
      });
      if (result.status === "accepted") {
        accepted = true;
        continuation = result.run ?? continuation;
      }
    }
    const headers = {
      "x-pai-thread-id": threadId,
      "x-pai-answer": accepted ? "accepted" : "already-settled",
    };
    if (continuation) {
      return createUIMessageStreamResponse({
        stream: continuation.stream,
        headers: { ...headers, "x-pai-run-id": continuation.runId },
      });
    }
    const active = await runtime.followRun(threadId);
    if (active) {
      return createUIMessageStreamResponse({
        stream: active.stream(),
        headers: { ...headers, "x-pai-run-id": active.runId },
      });
    }
    const [stored, actions] = await Promise.all([
      runtime.store.loadMessages(threadId),
      runtime.store.listPendingActions({ threadId }),
    ]);
    const chunks = catchUpChunks({ messageId: message.id, answers, stored, actions });
    return createUIMessageStreamResponse({
      stream: new ReadableStream<UIMessageChunk>({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(chunk);
          controller.close();
        },
      }),
      headers,
    });
  }

  return sendMessage;
}
