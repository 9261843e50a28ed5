import { tool as aiTool, generateId, type Schema, type Tool, zodSchema } from "ai";
import { z } from "zod";
import type { CallOutcome } from "../actions/call-outcome.ts";
import { hashInput } from "../actions/input-hash.ts";
import type { PendingActionAnswer } from "../actions/pending-action-answer.ts";
import { publicAction } from "../actions/public-action.ts";
import type { ToolEnd } from "../actions/tool-end.ts";
import { toolPartOf } from "../actions/tool-part-updates.ts";
import type { ToolResultEvent } from "../agents/define-agent.ts";
import type { NormalizedRegistration } from "../agents/tool-registration.ts";
import type { CapabilityMap } from "../capabilities/define-capability.ts";
import { provisionFailureOf } from "../capabilities/provision-failure.ts";
import { PaiError } from "../errors/pai-error.ts";
import type { JournalEntry, JournalOutcome, PendingActionRecord } from "../threads/thread-store.ts";
import type { AnyToolDefinition } from "../tools/define-tool.ts";
import type { ToolDataEntry, ToolEntry, ToolExecuteContext } from "../tools/tool-context.ts";
import { ToolFailSignal, ToolSuspendSignal } from "../tools/tool-signals.ts";
import { type CallJournal, createCallJournal } from "./call-journal.ts";
import { type CallScope, createCallScope, isWithin } from "./call-scope.ts";
import { GENERIC_TOOL_ERROR, redactedMessage, ToolCallError } from "./redaction.ts";
import { resolveEnabled } from "./resolve-enabled.ts";
import { type RunState, stopRun } from "./run-state.ts";

/** How one call settled in the pipeline, before the model or its caller sees it. */
type Settled =
  | { type: "output"; output: unknown }
  | {
      type: "error";
      message: string;
      kind: NonNullable<ToolResultEvent["error"]>["kind"];
      /** Why, for an inner caller: `DENIED`, `CANCELLED`, `TOOL_DISABLED`, a `ctx.fail` code. */
      code?: string | undefined;
      end?: ToolEnd;
    };

/** A call came out of the pipeline settled, or it did not settle because a call (it, or one below it) waits. */
type PipelineOutcome = Settled | { type: "wait" };

/** A journal entry of a call that waited and was answered. */
type AnsweredEntry = Extract<JournalEntry, { state: "answered" }>;

/** One call through the pipeline: the top-level call, or a call below it. */
interface PipelineCall {
  definition: AnyToolDefinition;
  /** How hooks, errors and tool data name it: the registration name, or the path joined with `.`. */
  label: string;
  /** Names from the top-level call down to this call. */
  path: string[];
  /** Its journal key (`""` for the top-level call). */
  key: string;
  input: unknown;
  /** Registrations whose `enabled` must hold: the top-level one, and an inner tool's own registration. */
  gates: readonly NormalizedRegistration[];
  /** The registration whose `mapContext` and `onOutput` the call uses, if any. */
  registration: NormalizedRegistration | undefined;
  /** The caller's context, for an inner tool without a `mapContext` of its own. */
  inherited: { context: unknown } | undefined;
  /** Inner calls validate their input here; the AI SDK validated the top-level call's. */
  validateInput: boolean;
  scope: CallScope;
  toolCallId: string;
  /** Set when the call waited and was answered. */
  answered: AnsweredEntry | undefined;
}

/** A call whose `execute` runs: where its own inner calls (`ctx.tools`, `ctx.agents`) sit. */
interface CallFrame {
  readonly call: PipelineCall;
  readonly context: unknown;
  /** The index of its next inner call. */
  next: number;
  /** What its own `ctx.suspend` threw. */
  suspended: ToolSuspendSignal | undefined;
}

/** What the AI SDK receives from a call that now waits for an answer; never shown to the model or client. */
const PENDING_OUTPUT = { pending: true } as const;

const inputSchemas = new WeakMap<z.ZodType, Schema<unknown>>();

/** The AI SDK schema of a tool's input, built once per zod schema so its JSON Schema is computed once. */
function inputSchemaOf(schema: z.ZodType): Schema<unknown> {
  let cached = inputSchemas.get(schema);
  if (!cached) {
    cached = zodSchema(schema as z.ZodType<unknown>) as Schema<unknown>;
    inputSchemas.set(schema, cached);
  }
  return cached;
}

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
 * Wraps one registration. Every call — the top-level one and each call below it (`ctx.tools.x`, a code-mode
 * program's tool call) — runs the same pipeline: recheck `enabled` → input → context (`mapContext`,
 * `contextSchema`) → `execute(ctx)` → `afterToolResult` → `outputSchema` → `onOutput`. A call below the top-level
 * one goes through the agent's registration of its tool id when there is one (its `enabled`, `mapContext` and
 * `onOutput`), and always through the top-level call's `enabled`. `ctx.suspend` anywhere, and client-executed
 * tools, end in one durable pending action per top-level call; the call's journal keeps what its inner calls
 * settled, so a resume answers them from it instead of running them again. `ctx.agents.run` is an inner call
 * too: its subagent's wait becomes the parent's pending action.
 */
export function createToolRunner(registration: NormalizedRegistration, state: RunState): ToolRunner {
  const { tool, name } = registration;
  const signal = state.controller.signal;

  const aiToolDefinition = aiTool({
    description: tool.description,
    inputSchema: inputSchemaOf(tool.inputSchema),
    metadata: { paiToolId: tool.id },
    ...(tool.toModelOutput
      ? {
          toModelOutput: (options: { toolCallId: string; input: unknown; output: unknown }) =>
            state.pendingToolCallIds.has(options.toolCallId)
              ? { type: "text" as const, value: "pending" }
              : tool.toModelOutput!(options),
        }
      : {}),
    execute: async (input: unknown, options: { toolCallId: string }) => {
      const ended = tool.execute
        ? state.checkpoint({ toolCallId: options.toolCallId, toolName: name, toolId: tool.id, input })
        : () => {};
      try {
        return toSdkResult(await runCall(input, options.toolCallId, createCallJournal()), options.toolCallId);
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
    const outcome = await runPipeline({
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
    await state.store.putPendingAction(action);
    state.pendingToolCallIds.add(toolCallId);
    state.pendingActions.push(action);
    state.transcript.write({ type: "data-pai-action", id: action.id, data: publicAction(action) } as never);
    return { type: "pending", action };
  }

  /** One call, top-level or inner: the pipeline every call runs. */
  async function runPipeline(call: PipelineCall): Promise<PipelineOutcome> {
    const { definition, scope, key } = call;
    const answer = call.answered?.answer as PendingActionAnswer | undefined;
    if (answer && answer.type !== "resume") return answeredOutcome(call, answer);
    if (!(await gatesOpen(call.gates))) {
      return {
        type: "error",
        message: `The tool "${call.label}" is not available.`,
        kind: "planned",
        code: "TOOL_DISABLED",
      };
    }
    let input = call.input;
    if (call.validateInput) {
      const parsed = await definition.inputSchema.safeParseAsync(input);
      if (!parsed.success) {
        return {
          type: "error",
          message: `nested tool "${call.label}": ${z.prettifyError(parsed.error)}`,
          kind: "planned",
          code: "INVALID_INPUT",
        };
      }
      input = parsed.data;
    }
    if (!definition.execute) {
      scope.waitFor({
        key,
        path: call.path,
        toolId: definition.id,
        input,
        kind: "client",
        name: "default",
        payload: input,
        suspendHistory: [],
      });
      return { type: "wait" };
    }
    let context: unknown;
    try {
      context = await contextOf(call);
    } catch (error) {
      await state.reportError(error, { phase: "tool", toolName: call.label, toolCallId: call.toolCallId });
      return { type: "error", message: GENERIC_TOOL_ERROR, kind: "thrown" };
    }
    const frame: CallFrame = { call, context, next: 0, suspended: undefined };
    const entry: ToolEntry =
      answer?.type === "resume"
        ? { type: "resume", name: call.answered!.name, resume: answer.resume }
        : { type: "initial" };
    const suspendHistory = call.answered?.suspendHistory ?? [];
    let executed: Settled | undefined;
    let ownSuspend: ToolSuspendSignal | undefined;
    try {
      const output = await definition.execute(buildContext(frame, input, entry, suspendHistory) as never);
      executed = { type: "output", output };
    } catch (error) {
      const diverged = scope.diverged;
      if (diverged && error === diverged) {
        executed = { type: "error", message: diverged.message, kind: "planned" };
      } else if (ToolFailSignal.isInstance(error)) {
        executed = { type: "error", message: error.message, kind: "planned", code: error.code };
      } else if (ToolSuspendSignal.isInstance(error) && error === frame.suspended) {
        ownSuspend = error;
      } else if (!(ToolSuspendSignal.isInstance(error) && scope.wait)) {
        // (A suspension from below or beside it, while a call waits, leaves `executed` unset: handled below.)
        if (signal.aborted) throw error;
        await state.reportError(error, { phase: "tool", toolName: call.label, toolCallId: call.toolCallId });
        // A capability that could not be provisioned is told as it is: the model and the user see why.
        const failure = provisionFailureOf(error);
        executed = failure
          ? { type: "error", message: failure.message, kind: "thrown", end: failure.end }
          : { type: "error", message: GENERIC_TOOL_ERROR, kind: "thrown" };
      }
    }
    // A call below this one waits: this call cannot settle, whatever its execute made of that.
    if (scope.wait && isWithin(scope.wait.key, key)) return { type: "wait" };
    if (ownSuspend) {
      let payload = ownSuspend.payload;
      if (definition.suspendSchema) {
        const parsed = await definition.suspendSchema.safeParseAsync(payload);
        if (!parsed.success) {
          const error = new PaiError(
            "INVALID_ARGUMENT",
            `tool "${call.label}" (id "${definition.id}") suspended with a payload that does not match its suspendSchema: ${z.prettifyError(parsed.error)}`,
            { cause: parsed.error },
          );
          await state.reportError(error, {
            phase: "tool",
            toolName: call.label,
            toolCallId: call.toolCallId,
          });
          return { type: "error", message: GENERIC_TOOL_ERROR, kind: "thrown" };
        }
        payload = parsed.data;
      }
      scope.waitFor({
        key,
        path: call.path,
        toolId: definition.id,
        input,
        kind: "suspend",
        name: ownSuspend.suspendName,
        payload,
        suspendHistory,
      });
      return { type: "wait" };
    }
    // Another call waits, and this one stopped because of it: it runs again on resume.
    if (!executed) return { type: "wait" };
    return finish(call, executed, input);
  }

  /** An answer other than resume, for a call that waited: the outcome a top-level call gets for it. */
  function answeredOutcome(
    call: PipelineCall,
    answer: Exclude<PendingActionAnswer, { type: "resume" }>,
  ): Promise<Settled> | Settled {
    switch (answer.type) {
      case "success":
        return finish(call, { type: "output", output: answer.output }, call.input);
      case "skip":
        return finish(call, { type: "output", output: answer.output ?? { skipped: true } }, call.input);
      case "fail":
        return finish(call, { type: "error", message: answer.message, kind: "planned" }, call.input);
      case "deny":
        return {
          type: "error",
          message: answer.reason ?? "The action was denied.",
          kind: "planned",
          code: "DENIED",
        };
      case "cancel":
        return {
          type: "error",
          message: answer.reason ?? "The action was cancelled.",
          kind: "planned",
          code: "CANCELLED",
        };
    }
  }

  /** afterToolResult → outputSchema → onOutput: the tail every settled call goes through. */
  async function finish(call: PipelineCall, executed: Settled, input: unknown): Promise<Settled> {
    const outcome = await settle(call, executed, input);
    const observer = call.registration;
    if (outcome.type === "error" || !observer?.onOutput) return outcome;
    try {
      await observer.onOutput({
        ...state.resolverArgs,
        input: input as never,
        output: outcome.output as never,
        tool: { name: observer.name, id: call.definition.id },
        call: { toolCallId: call.toolCallId },
        path: call.path,
      });
    } catch (error) {
      await state.reportError(error, {
        phase: "on-output",
        toolName: call.label,
        toolCallId: call.toolCallId,
      });
      stopRun(state, { type: "failed", error });
      return { type: "error", message: GENERIC_TOOL_ERROR, kind: "thrown" };
    }
    return outcome;
  }

  /** afterToolResult, then the output schema. */
  async function settle(call: PipelineCall, outcome: Settled, input: unknown): Promise<Settled> {
    const { definition } = call;
    let settled = outcome;
    const hook = state.agent.definition.lifecycle.afterToolResult;
    if (hook) {
      const event: ToolResultEvent = {
        name: call.label,
        toolId: definition.id,
        toolCallId: call.toolCallId,
        path: call.path,
        input,
        output: outcome.type === "output" ? outcome.output : undefined,
        ...(outcome.type === "error" ? { error: { message: outcome.message, kind: outcome.kind } } : {}),
      };
      const override = await hook(event, state.resolverArgs);
      if (override && "output" in override) settled = { type: "output", output: override.output };
      else if (override && "error" in override)
        settled = { type: "error", message: override.error, kind: "planned" };
    }
    if (settled.type === "output" && definition.outputSchema) {
      const parsed = await definition.outputSchema.safeParseAsync(settled.output);
      if (!parsed.success) {
        const error = new PaiError(
          "INVALID_OUTPUT",
          `tool "${call.label}" (id "${definition.id}") returned output that does not match its outputSchema: ${z.prettifyError(parsed.error)}`,
          { cause: parsed.error, details: { toolName: call.label, toolId: definition.id } },
        );
        await state.reportError(error, { phase: "tool", toolName: call.label, toolCallId: call.toolCallId });
        return { type: "error", message: GENERIC_TOOL_ERROR, kind: "invalid-output" };
      }
      settled = { type: "output", output: parsed.data };
    }
    return settled;
  }

  async function gatesOpen(gates: readonly NormalizedRegistration[]): Promise<boolean> {
    const open = await Promise.all(gates.map((gate) => resolveEnabled(gate, state.resolverArgs)));
    return open.every(Boolean);
  }

  async function contextOf(call: PipelineCall): Promise<unknown> {
    const { definition, registration: own } = call;
    const mapped = call.inherited
      ? call.inherited.context
      : own?.mapContext
        ? await own.mapContext(state.resolverArgs)
        : state.resolverArgs.runtimeContext;
    if (!definition.contextSchema) return mapped;
    const parsed = await definition.contextSchema.safeParseAsync(mapped);
    if (parsed.success) return parsed.data;
    throw new PaiError(
      "INVALID_CONTEXT",
      `tool "${call.label}" (id "${definition.id}") of agent "${state.agent.id}": the ${call.inherited ? "caller's" : own?.mapContext ? "mapped" : "runtime"} context does not match its contextSchema: ${z.prettifyError(parsed.error)}`,
      { cause: parsed.error, details: { toolName: call.label, toolId: definition.id } },
    );
  }

  /** The journal key of `frame`'s next inner call. */
  function nextKey(frame: CallFrame): string {
    const index = frame.next++;
    return frame.call.key === "" ? String(index) : `${frame.call.key}.${index}`;
  }

  /** The journal entry at `key`, checked against the call the run makes there now. */
  function journalEntryFor(
    scope: CallScope,
    key: string,
    path: string[],
    toolId: string,
    inputHash: string,
    toolCallId: string,
  ): JournalEntry | undefined {
    const recorded = scope.journal.take(key);
    if (!recorded || (recorded.toolId === toolId && recorded.inputHash === inputHash)) return recorded;
    throw scope.diverge(
      new PaiError(
        "JOURNAL_DIVERGED",
        `tool call "${toolCallId}" of "${name}" cannot resume: call ${key} (${path.join(" › ")}) is "${toolId}"${recorded.toolId === toolId ? " with other input" : ""}, but its journal has "${recorded.toolId}" there. Calls must be made in the same order with the same input when a call runs again`,
        { details: { toolCallId, key, path, toolId, journalToolId: recorded.toolId } },
      ),
    );
  }

  /** `ctx.tools.<key>(input)` of `frame`: a call below it, through the pipeline, answered from the journal when it settled before. */
  function callInner(frame: CallFrame, childKey: string, child: AnyToolDefinition, input: unknown) {
    const { scope } = frame.call;
    const key = nextKey(frame);
    const blocked = scope.blocked();
    if (blocked) return Promise.reject(blocked);
    return scope.track(runInner(frame, key, [...frame.call.path, childKey], child, input));
  }

  async function runInner(
    frame: CallFrame,
    key: string,
    path: string[],
    child: AnyToolDefinition,
    input: unknown,
  ): Promise<unknown> {
    const { scope, toolCallId } = frame.call;
    const inputHash = hashInput(input);
    const recorded = journalEntryFor(scope, key, path, child.id, inputHash, toolCallId);
    if (recorded?.state === "settled") return replay(recorded.outcome);
    const own = registrationOf(child.id);
    const outcome = await runPipeline({
      definition: child,
      label: path.join("."),
      path,
      key,
      input,
      gates: own ? [...frame.call.gates, own] : frame.call.gates,
      registration: own,
      inherited: own?.mapContext ? undefined : { context: frame.context },
      validateInput: true,
      scope,
      toolCallId,
      answered: recorded?.state === "answered" ? recorded : undefined,
    });
    if (outcome.type === "wait") {
      const wait = scope.wait!;
      if (wait.key === key) {
        scope.journal.put({
          key,
          toolId: child.id,
          inputHash,
          state: "waiting",
          name: wait.name,
          suspendHistory: wait.suspendHistory,
        });
      }
      throw wait.signal;
    }
    const settled = journalOutcomeOf(outcome);
    scope.journal.put({ key, toolId: child.id, inputHash, state: "settled", outcome: settled });
    return replay(settled);
  }

  /** `ctx.agents.run` of `frame`: a subagent run as an inner call; its wait is the parent's pending action. */
  function callSubagent(frame: CallFrame, options: { agentId: string; prompt: string }) {
    const { scope } = frame.call;
    const key = nextKey(frame);
    const blocked = scope.blocked();
    if (blocked) return Promise.reject(blocked);
    return scope.track(runSubagent(frame, key, options));
  }

  async function runSubagent(
    frame: CallFrame,
    key: string,
    { agentId, prompt }: { agentId: string; prompt: string },
  ): Promise<{ text: string; status: string; runId: string; threadId: string }> {
    const { scope, toolCallId } = frame.call;
    const path = [...frame.call.path, agentId];
    const toolId = `agent:${agentId}`;
    const inputHash = hashInput({ agentId, prompt });
    const recorded = journalEntryFor(scope, key, path, toolId, inputHash, toolCallId);
    if (recorded?.state === "settled") return replay(recorded.outcome) as never;
    if (!(await gatesOpen(frame.call.gates))) {
      throw new ToolFailSignal(`The tool "${frame.call.label}" is not available.`, "TOOL_DISABLED");
    }
    let outcome: Awaited<ReturnType<RunState["subagents"]["start"]>>;
    try {
      outcome = recorded?.subagent
        ? await state.subagents.resume({
            wait: recorded.subagent,
            answer: recorded.state === "answered" ? (recorded.answer as PendingActionAnswer) : undefined,
            signal,
          })
        : await state.subagents.start({ agentId, prompt, signal });
    } catch (error) {
      if (signal.aborted) throw error;
      await state.reportError(error, { phase: "tool", toolName: path.join("."), toolCallId });
      throw new ToolFailSignal(PaiError.isInstance(error) ? redactedMessage(error) : GENERIC_TOOL_ERROR);
    }
    if (outcome.type === "waiting") {
      const { action } = outcome;
      const wait = scope.waitFor({
        key,
        path: [...path, ...(action.inner?.path ?? [action.toolName])],
        toolId: action.inner?.toolId ?? action.toolId,
        input: action.inner?.input ?? action.input,
        kind: action.kind,
        name: action.name ?? "default",
        payload: action.payload,
        suspendHistory: action.suspendHistory,
      });
      // Kept even when another call is the one that waits: a resume finds the subagent's thread again.
      scope.journal.put({
        key,
        toolId,
        inputHash,
        state: "waiting",
        name: action.name ?? "default",
        suspendHistory: action.suspendHistory,
        subagent: { agentId, threadId: outcome.threadId, actionId: action.id },
      });
      throw wait.signal;
    }
    scope.journal.put({
      key,
      toolId,
      inputHash,
      state: "settled",
      outcome: { type: "output", output: outcome.result },
    });
    return outcome.result;
  }

  /** The `ctx` of a call's execute. */
  function buildContext(
    frame: CallFrame,
    input: unknown,
    entry: ToolEntry,
    suspendHistory: unknown[],
  ): ToolExecuteContext<unknown, unknown, CapabilityMap> {
    const { definition, label, toolCallId, gates } = frame.call;
    const capabilityNames = Object.fromEntries(
      Object.entries(definition.capabilities as CapabilityMap).map(([key, capability]) => [
        key,
        capability.name,
      ]),
    );
    return {
      input,
      context: frame.context,
      signal,
      thread: { threadId: state.threadId, runId: state.runId, toolCallId, toolName: label },
      agentId: state.agent.id,
      entry,
      fail(message, options) {
        throw new ToolFailSignal(message, options?.code);
      },
      suspend(payload, options) {
        frame.suspended = new ToolSuspendSignal(payload, options?.name ?? "default");
        throw frame.suspended;
      },
      suspendHistory,
      data: {
        write: async (channel, data) => {
          if (!(await gatesOpen(gates))) {
            throw new PaiError("TOOL_DISABLED", `tool "${label}" is disabled; it cannot write tool data`);
          }
          const schema = definition.dataSchemas?.[channel];
          const value = schema ? schema.parse(data) : data;
          const record = await state.store.appendToolData({
            threadId: state.threadId,
            runId: state.runId,
            toolCallId,
            toolId: definition.id,
            channel,
            data: value,
            createdAt: Date.now(),
          });
          state.transcript.write({
            type: `data-${channel}`,
            data: { toolCallId, toolId: definition.id, toolName: label, seq: record.seq, value },
          } as never);
        },
        list: async (channel, options) => {
          const records = await state.store.listToolData({
            threadId: state.threadId,
            channel,
            ...(options?.toolCallId ? { toolCallId: options.toolCallId } : {}),
          });
          return records
            .filter((record) => options?.toolCallId !== undefined || record.toolId === definition.id)
            .map(
              (record): ToolDataEntry<typeof channel, never> => ({
                channel,
                data: record.data as never,
                toolCallId: record.toolCallId,
                seq: record.seq,
                createdAt: record.createdAt,
              }),
            );
        },
      },
      files: state.files,
      capabilities: state.capabilitiesFor(capabilityNames) as never,
      tools: Object.fromEntries(
        Object.entries(definition.tools).map(([childKey, child]) => [
          childKey,
          (childInput: unknown) => callInner(frame, childKey, child, childInput),
        ]),
      ) as never,
      agents: { run: (options) => callSubagent(frame, options) },
    };
  }

  /** The agent's first registration of tool `toolId`, if it registers one. */
  function registrationOf(toolId: string): NormalizedRegistration | undefined {
    for (const candidate of state.agent.registrations.values()) {
      if (candidate.tool.id === toolId) return candidate;
    }
    return undefined;
  }

  return { aiTool: aiToolDefinition, settleAnswered };
}

/** How a settled inner call is journaled. */
function journalOutcomeOf(outcome: Settled): JournalOutcome {
  return outcome.type === "output"
    ? outcome
    : { type: "error", message: outcome.message, ...(outcome.code ? { code: outcome.code } : {}) };
}

/** What an inner caller gets: the output, or a planned failure it may catch (uncaught, it fails the caller). */
function replay(outcome: JournalOutcome): unknown {
  if (outcome.type === "output") return outcome.output;
  throw new ToolFailSignal(outcome.message, outcome.code);
}
