import {
  convertToModelMessages,
  generateId,
  isStepCount,
  type LanguageModel,
  type ModelMessage,
  streamText,
  type Tool,
  type UIMessage,
  type UIMessageChunk,
} from "ai";
import type { PendingActionAnswer } from "../actions/pending-action-answer.ts";
import { publicAction } from "../actions/public-action.ts";
import {
  applyToolPartUpdate,
  awaitAnswers,
  type ToolPartUpdate,
  toolPartUpdateChunks,
  waitingToolCallIds,
} from "../actions/tool-part-updates.ts";
import type { RegisteredAgent } from "../agents/create-pai.ts";
import type { AgentResolverArgs, RuntimeErrorInfo } from "../agents/define-agent.ts";
import type { CapabilityManager, LeaseScope } from "../capabilities/capability-manager.ts";
import { PaiError } from "../errors/pai-error.ts";
import type { PendingActionRecord, ThreadRecord, ThreadStore } from "../threads/thread-store.ts";
import type { ToolAgents } from "../tools/tool-context.ts";
import type { AgentRun, RunResult } from "./agent-run.ts";
import { redactedMessage } from "./redaction.ts";
import { resolveActiveTools } from "./resolve-enabled.ts";
import { createRunBroadcast } from "./run-broadcast.ts";
import { type RunState, stopRun } from "./run-state.ts";
import { createThreadFiles } from "./thread-files.ts";
import { createToolRunner, type ToolRunner } from "./tool-executor.ts";

/** What the runtime lends a run. */
export interface RunDependencies {
  store: ThreadStore;
  capabilities: CapabilityManager;
  /** Runs a subagent for `ctx.agents.run`. */
  subagents: (parent: { identity: unknown; clientData: unknown; signal: AbortSignal }) => ToolAgents;
  /** Called once the run has ended and its thread is stored. */
  onEnded: (runId: string, threadId: string) => void;
}

/** One run to start: a new user message, or (without one) the continuation after answered pending actions. */
export interface StartRunOptions {
  agent: RegisteredAgent;
  model: LanguageModel;
  /** The parsed identity. */
  identity: unknown;
  identityKey: string;
  thread: ThreadRecord;
  /** The new user message; absent for a continuation. */
  userMessage: UIMessage | undefined;
  clientData: unknown;
  signal: AbortSignal | undefined;
}

/** A started run plus its controller (for `runtime.cancel`) and replayable stream (for HTTP resume). */
export interface StartedRun extends AgentRun {
  controller: AbortController;
  subscribe(): ReadableStream<UIMessageChunk>;
}

const SUPERSEDED = "The action was cancelled: the user sent a new message.";

/**
 * Starts a run: builds the runtime context, settles answered pending actions, streams the model loop on
 * `streamText`, and commits the thread when it ends. Rejects (before anything runs) if `runtimeContext` fails.
 */
export async function startRun(deps: RunDependencies, options: StartRunOptions): Promise<StartedRun> {
  const { store } = deps;
  const { agent, model, identity, identityKey, thread, userMessage, clientData } = options;
  const definition = agent.definition;
  const threadId = thread.id;
  const runId = generateId();
  const controller = new AbortController();
  const onExternalAbort = () => controller.abort({ type: "cancelled" });
  if (options.signal?.aborted) onExternalAbort();
  options.signal?.addEventListener("abort", onExternalAbort, { once: true });
  const detach = () => options.signal?.removeEventListener("abort", onExternalAbort);

  const reportError = async (
    error: unknown,
    info: Omit<RuntimeErrorInfo, "agentId" | "threadId" | "runId">,
  ) => {
    try {
      await definition.onRuntimeError?.(error, { agentId: agent.id, threadId, runId, ...info });
    } catch {
      // an error reporter that throws must not take the run down with it
    }
  };

  let runtimeContext: unknown;
  try {
    runtimeContext = await definition.runtimeContext?.({
      identity,
      scope: { threadId, identityKey },
      threadId,
      clientData,
      signal: controller.signal,
    });
  } catch (error) {
    detach();
    await reportError(error, { phase: "run" });
    throw new PaiError("RUN_FAILED", `agent "${agent.id}": runtimeContext failed`, { cause: error });
  }
  const resolverArgs: AgentResolverArgs<unknown, unknown> = {
    runtimeContext,
    identity,
    clientData,
    threadId,
    signal: controller.signal,
  };

  const inputMessages = await store.loadMessages(threadId);
  const leaseScope: LeaseScope = {
    runId,
    threadId,
    identityKey,
    signal: controller.signal,
    onStatus: (event) => state.writer?.write({ type: "data-pai-capability", data: event } as never),
  };
  const state: RunState = {
    agent,
    runId,
    threadId,
    store,
    resolverArgs,
    controller,
    stopReason: undefined,
    pendingActions: [],
    pendingToolCallIds: new Set(),
    writer: undefined,
    reportError,
    files: createThreadFiles(() => inputMessages, controller.signal),
    agents: deps.subagents({ identity, clientData, signal: controller.signal }),
    capabilitiesFor: (names) =>
      Object.fromEntries(
        Object.entries(names).map(([key, name]) => [key, deps.capabilities.facade(name, leaseScope)]),
      ),
  };
  const runners = new Map<string, ToolRunner>();
  const tools: Record<string, Tool> = {};
  for (const registration of agent.registrations.values()) {
    const runner = createToolRunner(registration, state);
    runners.set(registration.name, runner);
    tools[registration.name] = runner.aiTool;
  }

  const updates: ToolPartUpdate[] = [];
  /** Applies answered pending actions to their tool parts; with `cancelPending`, closes unanswered ones. */
  const settleAnswered = async (cancelPending: boolean) => {
    const waiting = waitingToolCallIds(inputMessages);
    if (waiting.length === 0) return;
    const actions = await store.listPendingActions({ threadId });
    for (const toolCallId of waiting) {
      let action = latestAction(actions, toolCallId);
      if (!action) continue;
      if (action.status === "pending") {
        if (!cancelPending) {
          state.pendingActions.push(action);
          continue;
        }
        const answer: PendingActionAnswer = { type: "cancel", reason: SUPERSEDED };
        const settled = await store.settlePendingAction(action.id, "pending", {
          status: "cancelled",
          answer,
          settledAt: Date.now(),
        });
        action = settled.action ?? action;
      }
      const answer = action.answer as PendingActionAnswer | undefined;
      const runner = runners.get(action.toolName);
      const outcome = !answer
        ? { type: "error" as const, message: SUPERSEDED }
        : runner
          ? await runner.settleAnswered(action, answer)
          : { type: "error" as const, message: `The tool "${action.toolName}" is no longer available.` };
      if (outcome.type === "pending") continue;
      const update: ToolPartUpdate = { toolCallId, actionId: action.id, outcome };
      applyToolPartUpdate(inputMessages, update);
      updates.push(update);
      for (const chunk of toolPartUpdateChunks(update)) state.writer?.write(chunk as UIMessageChunk);
      state.writer?.write({ type: "data-pai-action", id: action.id, data: publicAction(action) } as never);
    }
  };

  if (userMessage) {
    await settleAnswered(true);
    inputMessages.push(userMessage);
  }
  const startedAt = Date.now();
  // Stored at once, so a reader (a reloaded page) sees the user's message while the run goes on.
  await store.commitRun({
    thread: { ...thread, updatedAt: startedAt },
    messages: inputMessages,
    run: { id: runId, threadId, agentId: agent.id, status: "running", startedAt },
  });

  let modelError: unknown;
  let finalMessages: UIMessage[] = inputMessages;
  const instructions =
    typeof definition.instructions === "function"
      ? await definition.instructions(resolverArgs)
      : definition.instructions;

  const gated = [...agent.registrations.values()].some((registration) => registration.enabled !== undefined);
  // Calls now waiting for an answer got a placeholder result from the SDK: clients never see it.
  const broadcast = createRunBroadcast<UIMessageChunk>(
    (chunk) => !(chunk.type === "tool-output-available" && state.pendingToolCallIds.has(chunk.toolCallId)),
  );
  /** PAI's own data parts (tool data, pending actions, capability status), stored on the reply at the end. */
  const dataParts: Array<{ type: string; id?: string; data: unknown; transient?: boolean }> = [];
  state.writer = {
    write(chunk) {
      broadcast.push(chunk);
      if (chunk.type.startsWith("data-")) dataParts.push(chunk as (typeof dataParts)[number]);
    },
  };

  /** Settles answered actions (a continuation), then streams the model loop into the broadcast. */
  const drive = async () => {
    if (!userMessage) {
      await settleAnswered(false);
      if (state.pendingActions.length > 0 || controller.signal.aborted) return;
    }
    const modelMessages = await convertToModelMessages(inputMessages, {
      tools,
      ignoreIncompleteToolCalls: true,
    });
    const result = streamText({
      model,
      ...(instructions !== undefined ? { instructions } : {}),
      messages: modelMessages,
      tools,
      stopWhen: [isStepCount(definition.maxSteps), () => state.pendingActions.length > 0],
      abortSignal: controller.signal,
      // Only agents with `enabled` gates (or their own prepareStep) pay for a per-step hook.
      ...(gated || definition.prepareStep
        ? {
            prepareStep: async ({
              stepNumber,
              messages,
            }: {
              stepNumber: number;
              messages: ModelMessage[];
            }) => {
              const activeTools = gated
                ? await resolveActiveTools(agent.registrations.values(), resolverArgs)
                : undefined;
              const extra = (await definition.prepareStep?.({ stepNumber, messages })) ?? {};
              return { ...(activeTools ? { activeTools } : {}), ...extra };
            },
          }
        : {}),
      onError: ({ error }) => {
        modelError ??= error;
      },
    });
    await broadcast.pipe(
      result.toUIMessageStream({
        originalMessages: inputMessages,
        generateMessageId: generateId,
        messageMetadata: ({ part }) => (part.type === "start" ? { runId, agentId: agent.id } : undefined),
        onError: redactedMessage,
        onFinish: ({ messages }) => {
          finalMessages = messages;
        },
      }),
    );
  };

  const stream = broadcast.subscribe();
  const done = (async (): Promise<RunResult> => {
    try {
      try {
        await drive();
      } catch (error) {
        if (!controller.signal.aborted) {
          await reportError(error, { phase: "run" });
          stopRun(state, { type: "failed", error });
        }
      } finally {
        broadcast.end();
      }
      storeDataParts(finalMessages, dataParts);
      for (const update of updates) applyToolPartUpdate(finalMessages, update);
      if (state.pendingToolCallIds.size > 0) awaitAnswers(finalMessages, state.pendingToolCallIds);
      const cancelled = controller.signal.aborted && state.stopReason?.type !== "failed";
      if (modelError !== undefined && !cancelled) await reportError(modelError, { phase: "model" });
      const status: RunResult["status"] =
        state.stopReason?.type === "failed" || (modelError !== undefined && !cancelled)
          ? "failed"
          : cancelled
            ? "cancelled"
            : state.pendingActions.length > 0
              ? "suspended"
              : "completed";
      const error =
        status === "failed"
          ? redactedMessage(state.stopReason?.type === "failed" ? state.stopReason.error : modelError)
          : undefined;
      const endedAt = Date.now();
      await store.commitRun({
        thread: { ...thread, updatedAt: endedAt },
        messages: finalMessages,
        run: { id: runId, threadId, agentId: agent.id, status, startedAt, endedAt, error },
      });
      return {
        status,
        runId,
        threadId,
        messages: finalMessages,
        text: lastAssistantText(finalMessages),
        ...(error !== undefined ? { error } : {}),
      };
    } finally {
      detach();
      await deps.capabilities.endRun(runId).catch(() => undefined);
      deps.onEnded(runId, threadId);
    }
  })();

  return {
    runId,
    threadId,
    stream,
    subscribe: () => broadcast.subscribe(),
    done,
    controller,
    cancel: () => controller.abort({ type: "cancelled" }),
  };
}

function latestAction(actions: PendingActionRecord[], toolCallId: string): PendingActionRecord | undefined {
  let latest: PendingActionRecord | undefined;
  for (const action of actions) {
    if (action.toolCallId === toolCallId && (!latest || action.createdAt >= latest.createdAt))
      latest = action;
  }
  return latest;
}

/** Stores PAI's data parts on the run's reply (the last assistant message), replacing earlier parts by id. */
function storeDataParts(
  messages: UIMessage[],
  chunks: Array<{ type: string; id?: string; data: unknown; transient?: boolean }>,
): void {
  const kept = chunks.filter((chunk) => chunk.transient !== true);
  if (kept.length === 0) return;
  let reply = messages.at(-1);
  if (reply?.role !== "assistant") {
    reply = { id: generateId(), role: "assistant", parts: [] };
    messages.push(reply);
  }
  const parts = reply.parts as Array<{ type: string; id?: string; data?: unknown }>;
  for (const chunk of kept) {
    const part = { type: chunk.type, ...(chunk.id !== undefined ? { id: chunk.id } : {}), data: chunk.data };
    const index =
      chunk.id === undefined ? -1 : parts.findIndex((p) => p.type === chunk.type && p.id === chunk.id);
    if (index >= 0) parts[index] = part;
    else parts.push(part);
  }
}

function lastAssistantText(messages: UIMessage[]): string {
  const last = messages.at(-1);
  if (last?.role !== "assistant") return "";
  return last.parts.map((part) => (part.type === "text" ? part.text : "")).join("");
}
