import { generateId } from "ai";
import { z } from "zod";
import { assertAnswerBound } from "../actions/answer-binding.ts";
import {
  type PendingActionAnswer,
  pendingActionAnswerSchema,
  statusOfAnswer,
} from "../actions/pending-action-answer.ts";
import { type PublicPendingAction, publicAction } from "../actions/public-action.ts";
import type { RegisteredAgent } from "../agents/create-pai.ts";
import { type NormalizedRegistration, resolveToolSources } from "../agents/tool-registration.ts";
import { PaiError } from "../errors/pai-error.ts";
import { countActionSettled } from "../telemetry/pai-metrics.ts";
import type { PendingActionRecord, ThreadRecord } from "../threads/thread-store.ts";
import type { AgentRun } from "./agent-run.ts";
import type { RunReservation } from "./local-runs.ts";
import { allEnabled } from "./resolve-enabled.ts";
import type { RuntimeParts } from "./runtime-parts.ts";
import { type WaitingCall, waitingCallOf } from "./waiting-call.ts";

/** How long an answer waits for a thread another process holds while it may be storing an answer to the same action. */
const ANSWER_WAIT_MS = 5000;

/** What `runtime.respond` accepts: the answer and the exact call it is bound to. */
export interface RespondOptions {
  threadId: string;
  actionId: string;
  toolCallId: string;
  toolId: string;
  inputHash: string;
  answer: PendingActionAnswer;
  /** The answering caller; must own the thread. */
  identity?: unknown;
  clientData?: unknown;
  signal?: AbortSignal;
}

/** What answering a pending action did. */
export type RespondResult =
  | {
      /** The answer was taken. `run` continues the conversation once no action of the thread waits any more. */
      status: "accepted";
      action: PublicPendingAction;
      run: AgentRun | undefined;
      /** Actions of the thread still waiting for an answer. */
      waiting: number;
    }
  | {
      /** The action had been settled before: nothing happened. */
      status: "already-settled";
      action: PublicPendingAction;
    };

/**
 * `runtime.respond`: checks the answer (its size and shape, the caller owns the thread, the answer is bound to the
 * action's exact call, the tool is still enabled for an answer that produces output, the payload matches the tool's
 * schema), reserves the thread, stores the answer, and — once no action of the thread waits any more — starts the
 * run that continues the conversation. An action settled meanwhile makes it `already-settled`, with nothing done.
 */
export async function respondToAction(parts: RespondParts, options: RespondOptions): Promise<RespondResult> {
  const { store } = parts;
  parts.assertOpen();
  parts.limits.checkAnswer(options);
  const answer = parseAnswer(options.answer);
  const { threadId, actionId } = options;
  const { action, thread } = await actionOnThread(parts, threadId, actionId);
  const agent = parts.pai.agent(thread.agentId);
  const identity = await parts.access.parseIdentity(agent, options.identity);
  const identityKey = parts.identityKeyOf(identity);
  parts.access.assertOwner(thread, identityKey);
  assertAnswerBound(action, options);
  if (action.status !== "pending") return { status: "already-settled", action: publicAction(action) };

  const registration = await registrationOf(agent, action, options.signal);
  const waiting = waitingCallOf(parts.pai, action, registration);
  // A tool source may not know its tool outside a run (one in a sandbox); the run the answer starts rechecks it.
  const unknownToSources = !registration && agent.sources.size > 0;
  if (
    !unknownToSources &&
    (answer.type === "resume" || answer.type === "success" || answer.type === "skip")
  ) {
    await assertEnabledForOutput({ agent, action, registration, waiting, identity, identityKey, options });
  }
  const validated = await validateAnswer(answer, action.kind, waiting.tool);
  // Reserved before the answer is stored, so an answer is never taken and then refused as busy.
  const reservation = await reserveToAnswer(parts, threadId, actionId, options.signal);
  if (!("start" in reservation)) return { status: "already-settled", action: publicAction(reservation) };
  try {
    const settled = await store.settlePendingAction(actionId, "pending", {
      status: statusOfAnswer(validated),
      answer: validated,
      settledAt: Date.now(),
    });
    if (!settled.changed || !settled.action) {
      return { status: "already-settled", action: publicAction(settled.action ?? action) };
    }
    countActionSettled();
    const stillWaiting = (await store.listPendingActions({ threadId, status: "pending" })).length;
    if (stillWaiting > 0)
      return {
        status: "accepted",
        action: publicAction(settled.action),
        run: undefined,
        waiting: stillWaiting,
      };
    const continuation = await reservation.start({
      agent,
      model: parts.modelOf(agent),
      identity,
      identityKey,
      thread,
      userMessage: undefined,
      clientData: options.clientData,
      signal: options.signal,
    });
    return { status: "accepted", action: publicAction(settled.action), run: continuation, waiting: 0 };
  } finally {
    await reservation.releaseUnlessStarted();
  }
}

/** The registration of the action's tool: the agent's own, or one a tool source of the agent offers now. */
async function registrationOf(
  agent: RegisteredAgent,
  action: PendingActionRecord,
  signal: AbortSignal | undefined,
): Promise<NormalizedRegistration | undefined> {
  const own = agent.registrations.get(action.toolName);
  if (own || agent.sources.size === 0) return own;
  const offered = await resolveToolSources({
    agentId: agent.id,
    sources: agent.sources,
    registrations: agent.registrations,
    threadId: action.threadId,
    signal: signal ?? new AbortController().signal,
    // A source that cannot answer now leaves the check to the run the answer starts.
    onError: () => {},
  });
  return [...offered.values()].flat().find((candidate) => candidate.name === action.toolName);
}

/** What answering needs of the runtime. */
type RespondParts = Pick<
  RuntimeParts,
  "pai" | "store" | "access" | "identityKeyOf" | "limits" | "runs" | "modelOf" | "assertOpen"
>;

function parseAnswer(answer: unknown): PendingActionAnswer {
  const parsed = pendingActionAnswerSchema.safeParse(answer);
  if (!parsed.success) throw new PaiError("BAD_REQUEST", `not an answer: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** The action and its thread; `UNKNOWN_ACTION` unless the action is on that thread. */
async function actionOnThread(
  parts: RespondParts,
  threadId: string,
  actionId: string,
): Promise<{ action: PendingActionRecord; thread: ThreadRecord }> {
  const action = await parts.store.getPendingAction(actionId);
  const thread = await parts.store.getThread(threadId);
  if (!action || !thread || action.threadId !== threadId) {
    throw new PaiError("UNKNOWN_ACTION", `no pending action "${actionId}" on thread "${threadId}"`);
  }
  return { action, thread };
}

/**
 * An answer that produces output (resume, success, skip) needs the tool registered and enabled now, for the
 * answering caller's context: the top-level registration and the waiting call's own gates. `TOOL_DISABLED` leaves
 * the action pending (cancel and fail are still taken).
 */
async function assertEnabledForOutput(options: {
  agent: RegisteredAgent;
  action: PendingActionRecord;
  registration: NormalizedRegistration | undefined;
  waiting: WaitingCall;
  identity: unknown;
  identityKey: string;
  options: RespondOptions;
}): Promise<void> {
  const { agent, action, registration, identity } = options;
  const { threadId, clientData, signal } = options.options;
  if (!registration) throw new PaiError("TOOL_DISABLED", `tool "${action.toolName}" is no longer registered`);
  const runtimeContext = await agent.definition.runtimeContext?.({
    identity,
    scope: { threadId, identityKey: options.identityKey },
    threadId,
    clientData,
    signal: signal ?? new AbortController().signal,
  });
  const resolverArgs = {
    runtimeContext,
    identity,
    clientData,
    threadId,
    signal: signal ?? new AbortController().signal,
  };
  if (!(await allEnabled([registration, ...options.waiting.gates(agent)], resolverArgs))) {
    throw new PaiError(
      "TOOL_DISABLED",
      `tool "${action.toolName}" is disabled; the action stays pending (cancel or fail it instead)`,
      { details: { actionId: action.id, toolName: action.toolName } },
    );
  }
}

/** The answer checked against the action's kind and its tool's schemas (a resume payload, a client tool's output). */
async function validateAnswer(
  answer: PendingActionAnswer,
  kind: "suspend" | "client",
  tool: WaitingCall["tool"],
): Promise<PendingActionAnswer> {
  if (answer.type === "resume") {
    if (kind !== "suspend") throw new PaiError("BAD_REQUEST", "only a suspended tool call can be resumed");
    if (!tool?.resumeSchema) return answer;
    const parsed = await tool.resumeSchema.safeParseAsync(answer.resume);
    if (!parsed.success)
      throw new PaiError(
        "INVALID_INPUT",
        `the resume payload does not match the tool's resumeSchema: ${z.prettifyError(parsed.error)}`,
      );
    return { type: "resume", resume: parsed.data };
  }
  if (answer.type === "success") {
    if (kind !== "client")
      throw new PaiError("BAD_REQUEST", "only a client-executed tool call takes an output");
    if (!tool?.outputSchema) return answer;
    const parsed = await tool.outputSchema.safeParseAsync(answer.output);
    if (!parsed.success)
      throw new PaiError(
        "INVALID_OUTPUT",
        `the submitted output does not match the tool's outputSchema: ${z.prettifyError(parsed.error)}`,
      );
    return { type: "success", output: parsed.data };
  }
  return answer;
}

/**
 * Reserves the thread (for a new run id) to store an answer. While another process holds it, that process may be
 * storing an answer to the same action: wait (up to {@link ANSWER_WAIT_MS}) until the thread is free or the action
 * is settled, which is returned then (the answer comes too late). `THREAD_BUSY` past the wait.
 */
async function reserveToAnswer(
  parts: RespondParts,
  threadId: string,
  actionId: string,
  signal: AbortSignal | undefined,
): Promise<RunReservation | PendingActionRecord> {
  const runId = generateId();
  const deadline = Date.now() + ANSWER_WAIT_MS;
  for (;;) {
    try {
      return await parts.runs.reserve(threadId, runId, "has a run in progress; answer once it ends");
    } catch (error) {
      if (!PaiError.hasCode(error, "THREAD_BUSY")) throw error;
      const current = await parts.store.getPendingAction(actionId);
      if (current && current.status !== "pending") return current;
      if (Date.now() >= deadline) throw error;
      await delay(25, signal);
    }
  }
}

/** Resolves after `ms`, or rejects with the signal's reason once it aborts. */
function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
