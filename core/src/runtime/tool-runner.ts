import { tool as aiTool, generateId, type Tool } from "ai";
import type { CallOutcome } from "../actions/call-outcome.ts";
import { hashInput } from "../actions/input-hash.ts";
import type { PendingActionAnswer } from "../actions/pending-action-answer.ts";
import { publicAction } from "../actions/public-action.ts";
import { toolPartOf } from "../actions/tool-part-updates.ts";
import type { NormalizedRegistration } from "../agents/tool-registration.ts";
import { PaiError } from "../errors/pai-error.ts";
import type { PendingActionRecord } from "../threads/thread-store.ts";
import { toolInputAiSchema } from "../tools/tool-input-schema.ts";
import { type CallJournal, createCallJournal } from "./call-journal.ts";
import type { CallPipeline } from "./call-pipeline.ts";
import { type CallScope, createCallScope } from "./call-scope.ts";
import { ToolCallError } from "./redaction.ts";
import type { RunState } from "./run-state.ts";

/** What the AI SDK receives from a call that now waits for an answer; never shown to the model or client. */
const PENDING_OUTPUT = { pending: true } as const;

/** Runs one registration's calls through PAI's pipeline, for the model loop and for answered pending actions. */
export interface ToolRunner {
  /** The registration as an AI SDK tool for `streamText`. */
  readonly aiTool: Tool;
  /**
   * Settles a call whose pending action was answered. A resume — and any answer to a call below the top-level
   * one — runs the top-level `execute` again over the call's journal.
   */
  settleAnswered(action: PendingActionRecord, answer: PendingActionAnswer): Promise<CallOutcome>;
}

/**
 * Wraps one registration: the model's calls of it (as an AI SDK tool) and the answers to its pending actions.
 * Each top-level call runs the run's call pipeline ({@link CallPipeline}) over the call's journal, and the calls it
 * makes below itself run the same pipeline. A call below the top-level one goes through the agent's registration of
 * its tool id when there is one (its `enabled`, `mapContext` and `onOutput`), and always through the top-level
 * call's `enabled`. `ctx.suspend` anywhere, and client-executed tools, end in one durable pending action per
 * top-level call; the call's journal keeps what its inner calls settled, so a resume answers them from it instead
 * of running them again. `ctx.agents.run` is an inner call too: its subagent's wait becomes the parent's pending
 * action.
 */
export function createToolRunner(options: {
  registration: NormalizedRegistration;
  state: RunState;
  /** The run's call pipeline, shared by its runners. */
  pipeline: CallPipeline;
}): ToolRunner {
  const { registration, state, pipeline } = options;
  const { tool, name } = registration;

  const aiToolDefinition = aiTool({
    description: tool.description,
    inputSchema: toolInputAiSchema(tool.inputSchema),
    metadata: { paiToolId: tool.id },
    ...(tool.toModelOutput
      ? {
          toModelOutput: (call: { toolCallId: string; input: unknown; output: unknown }) =>
            state.pendingToolCallIds.has(call.toolCallId)
              ? { type: "text" as const, value: "pending" }
              : tool.toModelOutput!(call),
        }
      : {}),
    execute: async (input: unknown, { toolCallId }: { toolCallId: string }) => {
      const ended = tool.execute
        ? state.checkpoint({ toolCallId, toolName: name, toolId: tool.id, input })
        : () => {};
      try {
        return toSdkResult(await runCall(input, toolCallId, createCallJournal()), toolCallId);
      } finally {
        ended();
      }
    },
  } as Tool) as Tool;

  function toSdkResult(outcome: CallOutcome, toolCallId: string): unknown {
    switch (outcome.type) {
      case "output":
        return outcome.output;
      case "pending":
        return PENDING_OUTPUT;
      case "error":
        if (outcome.end) state.transcript.endCall(toolCallId, outcome.end);
        throw new ToolCallError(outcome.message);
      case "denied":
        throw new ToolCallError(outcome.reason ?? "The action was denied.");
    }
  }

  async function settleAnswered(
    action: PendingActionRecord,
    answer: PendingActionAnswer,
  ): Promise<CallOutcome> {
    if (!action.inner && answer.type === "deny") {
      return { type: "denied", reason: answer.reason, actionId: action.id };
    }
    const key = action.inner?.key ?? "";
    const waiting = action.journal?.find((entry) => entry.key === key && entry.state === "waiting");
    const journal = createCallJournal(action.journal);
    journal.put({
      key,
      toolId: waiting?.toolId ?? action.toolId,
      inputHash: waiting?.inputHash ?? action.inputHash,
      state: "answered",
      answer,
      name: action.name ?? "default",
      suspendHistory: [...action.suspendHistory, action.payload],
      ...(waiting?.state === "waiting" && waiting.subagent ? { subagent: waiting.subagent } : {}),
    });
    return runCall(action.input, action.toolCallId, journal);
  }

  /** Runs the top-level call over `journal`: it settles, or it becomes a pending action. */
  async function runCall(input: unknown, toolCallId: string, journal: CallJournal): Promise<CallOutcome> {
    const scope = createCallScope(journal);
    const root = journal.take("");
    const outcome = await pipeline.run({
      definition: tool,
      label: name,
      path: [name],
      key: "",
      input,
      gates: [registration],
      registration,
      inherited: undefined,
      validateInput: false,
      scope,
      toolCallId,
      answered: root?.state === "answered" ? root : undefined,
    });
    // What runs below a call that waits settles first, so the journal stored with the action holds it.
    if (outcome.type === "wait") await scope.idle();
    const unreached = outcome.type === "wait" ? [] : journal.unreachedAnswers();
    if (!scope.diverged && unreached[0]) {
      scope.diverge(
        new PaiError(
          "JOURNAL_DIVERGED",
          `tool call "${toolCallId}" of "${name}" cannot resume: it ended without making call ${unreached[0].key} ("${unreached[0].toolId}"), the one that was answered`,
          { details: { toolCallId, key: unreached[0].key } },
        ),
      );
    }
    const diverged = scope.diverged;
    if (diverged) {
      await state.reportError(diverged, { phase: "tool", toolName: name, toolCallId });
      return { type: "error", message: diverged.message };
    }
    if (outcome.type === "wait") return suspendCall(scope, input, toolCallId);
    if (outcome.type === "output") return outcome;
    return { type: "error", message: outcome.message, ...(outcome.end ? { end: outcome.end } : {}) };
  }

  /** Stores the call that waits as the top-level call's pending action, with the journal so far. */
  async function suspendCall(scope: CallScope, input: unknown, toolCallId: string): Promise<CallOutcome> {
    const wait = scope.wait!;
    // The action itself says how the call that waits was entered; an earlier answer to it is spent.
    if (wait.key === "") scope.journal.drop("");
    const journal = scope.journal.entries();
    // A call of this run's reply is stored before its action: an action whose run dies is never without its call.
    if (!toolPartOf(state.transcript.messages, toolCallId))
      await state.storeCall({ toolCallId, toolName: name, toolId: tool.id, input });
    const action: PendingActionRecord = {
      id: generateId(),
      threadId: state.threadId,
      runId: state.runId,
      toolCallId,
      toolId: tool.id,
      toolName: name,
      inputHash: hashInput(input),
      input,
      kind: wait.kind,
      name: wait.kind === "client" ? undefined : wait.name,
      payload: wait.payload,
      suspendHistory: wait.suspendHistory,
      status: "pending",
      createdAt: Date.now(),
      ...(wait.key !== ""
        ? { inner: { path: wait.path, key: wait.key, toolId: wait.toolId, input: wait.input } }
        : {}),
      ...(journal.length > 0 ? { journal } : {}),
    };
    const traceParent = state.telemetry.traceParent();
    if (traceParent) action.traceParent = traceParent;
    await state.store.putPendingAction(action);
    state.telemetry.pendingAction(action);
    state.pendingToolCallIds.add(toolCallId);
    state.pendingActions.push(action);
    state.transcript.write({ type: "data-pai-action", id: action.id, data: publicAction(action) } as never);
    return { type: "pending", action };
  }

  return { aiTool: aiToolDefinition, settleAnswered };
}
