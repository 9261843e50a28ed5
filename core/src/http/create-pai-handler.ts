import { createUIMessageStreamResponse, type UIMessage, type UIMessageChunk } from "ai";
import { z } from "zod";
import { catchUpChunks, nativeAnswersOf } from "../actions/native-answers.ts";
import { pendingActionAnswerSchema } from "../actions/pending-action-answer.ts";
import { PaiError, type PaiErrorCode } from "../errors/pai-error.ts";
import { createPreviewGateway, type PreviewGateway } from "../previews/preview-gateway.ts";
import { isPreviewOrigin } from "../previews/preview-origin.ts";
import type { AgentRun } from "../runtime/agent-run.ts";
import type { AgentRuntime } from "../runtime/create-agent-runtime.ts";
import { type RuntimeServices, runtimeServices } from "../runtime/runtime-services.ts";
import { NODE_ROUTE, type NodeRoute } from "./node-listener.ts";
import { readLimitedBody } from "./read-limited-body.ts";
import { createUpgradeHandler, type UpgradeListener } from "./upgrade-handler.ts";

/** What `createPaiHandler` accepts. */
export interface PaiHandlerOptions {
  runtime: AgentRuntime;
  /**
   * Who is calling. Return the identity (parsed by the agent's `identity` schema), or `null`/`undefined` for
   * 401. Identity never comes from the request body.
   */
  authenticate: (request: Request) => unknown | Promise<unknown>;
  /** Path prefix of every route. @default "/api" */
  basePath?: string;
  /** The agent for `POST /chat` bodies without `agentId`. @default the only agent, when there is one */
  defaultAgentId?: string;
  /** Called with every unexpected error (the response says only "internal error"). */
  onError?: (error: unknown) => void;
  /**
   * The largest request body accepted, in bytes. A bigger one is refused with 413 (`BODY_TOO_LARGE`) as soon as
   * its `Content-Length` or its streamed bytes pass the limit; it is never buffered whole.
   * @default 1048576 (1 MiB)
   */
  maxBodyBytes?: number;
  /** The capability whose `openTerminal` the terminal route opens. @default "sandbox" */
  terminalCapability?: string;
}

/**
 * The handler `createPaiHandler` returns: fetch-style, plus `upgrade` for a Node server's `upgrade` event (WebSockets
 * to previews and terminals; `toNodeListener` attaches it by itself).
 */
export type PaiHandler = ((request: Request) => Promise<Response>) & { readonly upgrade: UpgradeListener };

const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

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

const forkBody = z.object({ atMessageId: z.string().min(1).optional() });

const answerBody = z.object({
  toolCallId: z.string(),
  toolId: z.string(),
  inputHash: z.string(),
  answer: pendingActionAnswerSchema,
  clientData: z.unknown().optional(),
});

/** Longest title `PATCH /threads/:threadId` takes, in UTF-16 code units. */
const MAX_TITLE_LENGTH = 200;

const renameBody = z.object({
  /** Trimmed; empty clears the title. */
  title: z.string().trim().max(MAX_TITLE_LENGTH),
});

const statusOf: Partial<Record<PaiErrorCode, number>> = {
  BAD_REQUEST: 400,
  TOO_MANY_PARTS: 400,
  INVALID_ARGUMENT: 400,
  INVALID_INPUT: 400,
  INVALID_OUTPUT: 400,
  INVALID_IDENTITY: 403,
  PREVIEW_FORBIDDEN: 403,
  PREVIEW_NOT_FOUND: 404,
  PREVIEW_UNREACHABLE: 502,
  PREVIEWS_UNAVAILABLE: 409,
  TOOL_DISABLED: 403,
  NOT_FOUND: 404,
  UNKNOWN_AGENT: 404,
  UNKNOWN_RUN: 404,
  UNKNOWN_ACTION: 404,
  UNKNOWN_MESSAGE: 404,
  STALE_ANSWER: 409,
  THREAD_BUSY: 409,
  BODY_TOO_LARGE: 413,
  MESSAGE_TOO_LARGE: 413,
  ANSWER_TOO_LARGE: 413,
  CLIENT_DATA_TOO_LARGE: 413,
};

type Route = (request: Request, identity: unknown, params: string[]) => Promise<Response>;

/**
 * A fetch-style handler (`Request → Response`) for PAI's HTTP interface, mountable in Node http, Hono or
 * Next.js. Routes (under `basePath`):
 * - `POST /chat` — send a message (`useChat` body: `{ id, messages, trigger, messageId }`, only the last message is
 *   read); streams the UI message stream (SSE). A last message that is the assistant's carries `useChat`'s answers
 *   instead: approval responses (`addToolApprovalResponse`) and client tool outputs (`addToolOutput`), bound as the
 *   action route binds answers; the continuation is streamed (header `x-pai-answer: accepted | already-settled`).
 *   With `messageId` (`sendMessage({ text, messageId })`) the message is an edit of that earlier user message: the
 *   thread is rewound to just before it (later messages dropped, the sandbox's files restored, its processes
 *   stopped) and the edited message, with the id the client gives it, runs in its place. `trigger:
 *   "regenerate-message"` (`regenerate({ messageId })`) runs the user message at or before `messageId` (default:
 *   the thread's last message) again in its place, the same way. A `messageId` the thread does not have is
 *   `UNKNOWN_MESSAGE` (404); a thread with a run in progress, `THREAD_BUSY` (409)
 * - `GET /chat/:threadId/stream` — the run in progress on a thread, from its start (204 when none), in whichever
 *   process sharing the store runs it
 * - `POST /chat/:threadId/stop`, `POST /runs/:runId/stop` — stop a run, in whichever process sharing the store runs
 *   it: `{ stopped, runId, where: "local" | "remote", status }` (see `runtime.stop`)
 * - `POST /threads/:threadId/actions/:actionId` — answer a pending action `{ toolCallId, toolId, inputHash, answer }`;
 *   JSON, or (with `Accept: text/event-stream`) the continuation's UI message stream
 * - `GET /threads` — the caller's threads, each with `pendingActionCount` (actions waiting for an answer),
 *   `lastRunStatus` (how its newest run ended, or `running`) and `lastAnswer` (how the action answered last was
 *   answered: `denied`, `resumed`…), `null` when there is none;
 *   `GET /threads/:threadId` — messages, pending actions, tool data
 * - `POST /threads/:threadId/fork` — a copy of the thread `{ atMessageId? }` (default: up to its last message) with
 *   its sandbox's files as they were at that message, owned by the caller, the original untouched: 201
 *   `{ threadId, forkedFrom: { threadId, messageId }, restored }`
 * - `PATCH /threads/:threadId` — rename it `{ title }` (trimmed, at most 200 characters; empty clears it):
 *   `{ thread }`; `DELETE /threads/:threadId`; `GET /manifest`
 * - `GET /threads/:threadId/previews` — the thread's open previews (`{ previews: [{ id, url, port, access,
 *   expiresAt }] }`): a closed or expired one is absent
 * - `GET /threads/:threadId/terminal` (WebSocket, through `upgrade`) — a terminal in the thread's sandbox, for the
 *   thread's own identity, from the app's own origin
 * - any request whose `Host` is a preview's (`<id>.localhost:<port>`, see `sandbox.exposePort`) goes to the
 *   preview's port, after its token or identity is checked; API requests from a preview's origin are refused
 * Another identity's thread is a 404. Errors are `{ error: { code, message } }`; server errors are redacted.
 */
export function createPaiHandler(options: PaiHandlerOptions): PaiHandler {
  const { runtime } = options;
  const basePath = (options.basePath ?? "/api").replace(/\/$/, "");
  const agentIds = Object.keys(runtime.pai.agents);
  const defaultAgentId = options.defaultAgentId ?? (agentIds.length === 1 ? agentIds[0] : undefined);
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes < 0)
    throw new PaiError(
      "INVALID_ARGUMENT",
      `maxBodyBytes must be a whole number of bytes, not ${maxBodyBytes}`,
    );

  const services = requireServices(runtime);
  const gateway = previewGatewayOf(services, runtime, options.authenticate);

  const routes: Array<{ method: string; pattern: RegExp; route: Route }> = [
    { method: "POST", pattern: /^\/chat$/, route: sendMessage },
    { method: "GET", pattern: /^\/chat\/([^/]+)\/stream$/, route: resumeStream },
    { method: "POST", pattern: /^\/chat\/([^/]+)\/stop$/, route: stopThreadRun },
    { method: "POST", pattern: /^\/runs\/([^/]+)\/stop$/, route: stopRun },
    { method: "POST", pattern: /^\/threads\/([^/]+)\/actions\/([^/]+)$/, route: answerAction },
    { method: "GET", pattern: /^\/threads$/, route: listThreads },
    { method: "GET", pattern: /^\/threads\/([^/]+)$/, route: readThread },
    { method: "PATCH", pattern: /^\/threads\/([^/]+)$/, route: renameThread },
    { method: "DELETE", pattern: /^\/threads\/([^/]+)$/, route: deleteThread },
    { method: "POST", pattern: /^\/threads\/([^/]+)\/fork$/, route: forkThread },
    { method: "GET", pattern: /^\/threads\/([^/]+)\/previews$/, route: listPreviews },
    { method: "GET", pattern: /^\/manifest$/, route: async () => json(200, runtime.manifest()) },
  ];

  async function sendMessage(request: Request, identity: unknown): Promise<Response> {
    const body = await parseBody(request, chatBody, maxBodyBytes);
    if (body.trigger === "regenerate-message") return regenerate(body, identity);
    const message = body.messages.at(-1) as unknown as UIMessage | undefined;
    if (message?.role === "assistant") return answerInChat(body, message, identity);
    if (message?.role !== "user")
      throw new PaiError("BAD_REQUEST", "the last message must be the user's new message");
    const threadId = body.threadId ?? body.id;
    if (body.messageId !== undefined) {
      // An edit: the message replaces an earlier one, whatever followed it is dropped.
      if (!threadId) throw new PaiError("BAD_REQUEST", "an edit names its thread: the chat's id");
      await requireThread(threadId, identity);
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
    await requireThread(threadId, identity);
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
    await requireThread(threadId, identity);
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

  async function resumeStream(_request: Request, identity: unknown, [threadId]: string[]): Promise<Response> {
    await requireThread(threadId!, identity);
    const active = await runtime.followRun(threadId!);
    if (!active) return new Response(null, { status: 204 });
    return createUIMessageStreamResponse({
      stream: active.stream(),
      headers: { "x-pai-run-id": active.runId },
    });
  }

  async function stopThreadRun(
    _request: Request,
    identity: unknown,
    [threadId]: string[],
  ): Promise<Response> {
    await requireThread(threadId!, identity);
    return json(200, await runtime.stop({ threadId: threadId! }));
  }

  async function stopRun(_request: Request, identity: unknown, [runId]: string[]): Promise<Response> {
    const run = await runtime.store.getRun(runId!);
    if (!run) throw new PaiError("UNKNOWN_RUN", `no run "${runId}"`);
    await requireThread(run.threadId, identity);
    return json(200, await runtime.stop({ runId: run.id }));
  }

  async function answerAction(
    request: Request,
    identity: unknown,
    [threadId, actionId]: string[],
  ): Promise<Response> {
    const body = await parseBody(request, answerBody, maxBodyBytes);
    await requireThread(threadId!, identity);
    const result = await runtime.respond({
      threadId: threadId!,
      actionId: actionId!,
      toolCallId: body.toolCallId,
      toolId: body.toolId,
      inputHash: body.inputHash,
      answer: body.answer,
      identity,
      clientData: body.clientData,
    });
    if (result.status === "accepted" && result.run && wantsStream(request)) {
      return createUIMessageStreamResponse({
        stream: result.run.stream,
        headers: { "x-pai-run-id": result.run.runId, "x-pai-thread-id": threadId! },
      });
    }
    return json(200, {
      status: result.status,
      action: result.action,
      ...(result.status === "accepted" ? { runId: result.run?.runId ?? null, waiting: result.waiting } : {}),
    });
  }

  async function listThreads(request: Request, identity: unknown): Promise<Response> {
    const agentId = new URL(request.url).searchParams.get("agentId") ?? undefined;
    const threads = await runtime.listThreads({ identity, ...(agentId ? { agentId } : {}) });
    const states = await Promise.all(threads.map((thread) => threadState(runtime, thread.id)));
    return json(200, { threads: threads.map((thread, index) => ({ ...thread, ...states[index] })) });
  }

  async function readThread(_request: Request, identity: unknown, [threadId]: string[]): Promise<Response> {
    const snapshot = await runtime.getThread(threadId!, { identity });
    if (!snapshot) throw new PaiError("NOT_FOUND", `no thread "${threadId}"`);
    const active = await runtime.followRun(threadId!);
    return json(200, { ...snapshot, activeRunId: active?.runId ?? null });
  }

  async function renameThread(request: Request, identity: unknown, [threadId]: string[]): Promise<Response> {
    const body = await parseBody(request, renameBody, maxBodyBytes);
    await requireThread(threadId!, identity);
    const thread = await runtime.store.setThreadTitle(threadId!, body.title || undefined);
    if (!thread) throw new PaiError("NOT_FOUND", `no thread "${threadId}"`);
    return json(200, { thread });
  }

  async function deleteThread(_request: Request, identity: unknown, [threadId]: string[]): Promise<Response> {
    await requireThread(threadId!, identity);
    await runtime.deleteThread(threadId!);
    return json(200, { deleted: true });
  }

  async function forkThread(request: Request, identity: unknown, [threadId]: string[]): Promise<Response> {
    const body = await parseBody(request, forkBody, maxBodyBytes);
    const fork = await runtime.forkThread({
      threadId: threadId!,
      identity,
      ...(body.atMessageId !== undefined ? { atMessageId: body.atMessageId } : {}),
    });
    return json(201, fork);
  }

  async function listPreviews(_request: Request, identity: unknown, [threadId]: string[]): Promise<Response> {
    await requireThread(threadId!, identity);
    const previews = runtime.listPreviews(threadId!).map(({ close: _close, ...preview }) => preview);
    return json(200, { previews });
  }

  async function requireThread(threadId: string, identity: unknown): Promise<void> {
    await runtime.access.requireThread(threadId, identity);
  }

  const handle = async (request: Request): Promise<Response> => {
    try {
      const url = new URL(request.url);
      const previewId = gateway.previewIdOf(request.headers.get("host") ?? url.host);
      if (previewId !== undefined) return await gateway.handle(request, previewId);
      if (isPreviewOrigin(request.headers.get("origin"), services.previews.baseUrl))
        throw new PaiError("PREVIEW_FORBIDDEN", "a preview's page cannot call the app's API");
      if (isLoopback(url.hostname)) services.previews.learnBaseUrl(url.origin);
      if (!url.pathname.startsWith(basePath)) throw new PaiError("NOT_FOUND", `no route ${url.pathname}`);
      const path = url.pathname.slice(basePath.length) || "/";
      const candidates = routes.filter((entry) => entry.pattern.test(path));
      if (candidates.length === 0) throw new PaiError("NOT_FOUND", `no route ${url.pathname}`);
      const match = candidates.find((entry) => entry.method === request.method);
      if (!match)
        return json(405, {
          error: { code: "METHOD_NOT_ALLOWED", message: `${request.method} is not allowed here` },
        });
      const identity = await options.authenticate(request);
      if (identity === null || identity === undefined) {
        return json(401, { error: { code: "UNAUTHENTICATED", message: "authentication required" } });
      }
      const params = (match.pattern.exec(path) ?? []).slice(1).map((value) => decodeURIComponent(value));
      return await match.route(request, identity, params);
    } catch (error) {
      return errorResponse(error, options.onError);
    }
  };
  return Object.assign(handle, nodeHandlers({ options, services, gateway, basePath }));
}

/** What a Node server gets besides the fetch-style handler: upgrades, and previews Node stream to Node stream. */
function nodeHandlers(context: {
  options: PaiHandlerOptions;
  services: RuntimeServices;
  gateway: PreviewGateway;
  basePath: string;
}): { upgrade: UpgradeListener; [NODE_ROUTE]: NodeRoute } {
  const { options, services, gateway, basePath } = context;
  const upgrade = createUpgradeHandler({
    runtime: options.runtime,
    services,
    gateway,
    authenticate: options.authenticate,
    basePath,
    terminalCapability: options.terminalCapability ?? "sandbox",
    onError: options.onError,
  });
  const nodeRoute: NodeRoute = async (req, res) => {
    const previewId = gateway.previewIdOf(req.headers.host);
    if (previewId === undefined) return false;
    await gateway.handleNode(req, res, previewId);
    return true;
  };
  return { upgrade, [NODE_ROUTE]: nodeRoute };
}

/** What a thread list shows of each thread: actions waiting, how its newest run ended, its last answer. */
async function threadState(runtime: AgentRuntime, threadId: string) {
  const [actions, runs] = await Promise.all([
    runtime.store.listPendingActions({ threadId }),
    runtime.store.listRuns(threadId),
  ]);
  const settled = actions.filter((action) => action.status !== "pending");
  const lastAnswered = settled.reduce<(typeof settled)[number] | undefined>(
    (latest, action) => ((action.settledAt ?? 0) >= (latest?.settledAt ?? 0) ? action : latest),
    undefined,
  );
  const lastRun = runs.reduce<(typeof runs)[number] | undefined>(
    (latest, run) => (run.startedAt >= (latest?.startedAt ?? 0) ? run : latest),
    undefined,
  );
  return {
    pendingActionCount: actions.length - settled.length,
    lastRunStatus: lastRun?.status ?? null,
    lastAnswer: lastAnswered?.status ?? null,
  };
}

function requireServices(runtime: AgentRuntime): RuntimeServices {
  const services = runtimeServices(runtime);
  if (!services)
    throw new PaiError("INVALID_ARGUMENT", "createPaiHandler needs a runtime made by createAgentRuntime");
  return services;
}

/** The gateway to the runtime's previews, with `access: "identity"` checked through `authenticate`. */
export function previewGatewayOf(
  services: RuntimeServices,
  runtime: AgentRuntime,
  authenticate: (request: Request) => unknown | Promise<unknown>,
): PreviewGateway {
  return createPreviewGateway({
    registry: services.previews,
    connect: (entry, signal) => services.connectPreview(entry, signal),
    async identityKeyOf(request) {
      try {
        const identity = await authenticate(request);
        return identity === null || identity === undefined ? undefined : runtime.identityKey(identity);
      } catch {
        return undefined;
      }
    },
  });
}

/** A host a browser reaches only on this machine: previews under it are `<id>.localhost`. */
function isLoopback(hostname: string): boolean {
  return hostname === "localhost" || hostname === "127.0.0.1" || hostname === "[::1]";
}

/** Whether the client asked for the continuation as a UI message stream instead of JSON. */
function wantsStream(request: Request): boolean {
  return (request.headers.get("accept") ?? "").includes("text/event-stream");
}

async function parseBody<SCHEMA extends z.ZodType>(
  request: Request,
  schema: SCHEMA,
  maxBytes: number,
): Promise<z.output<SCHEMA>> {
  const text = await readLimitedBody(request, { maxBytes });
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new PaiError("BAD_REQUEST", "the body is not valid JSON");
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success)
    throw new PaiError("BAD_REQUEST", `the body does not match: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

function errorResponse(error: unknown, onError: ((error: unknown) => void) | undefined): Response {
  const status = PaiError.isInstance(error) ? statusOf[error.code] : undefined;
  if (status !== undefined && PaiError.isInstance(error)) {
    return json(status, { error: { code: error.code, message: error.message } });
  }
  onError?.(error);
  return json(500, { error: { code: "INTERNAL", message: "An internal error occurred." } });
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}
