import { type Context, trace } from "@opentelemetry/api";
import { z } from "zod";
import type { PendingActionAnswer } from "../actions/pending-action-answer.ts";
import { provisionFailureOf } from "../capabilities/provision-failure.ts";
import { PaiError } from "../errors/pai-error.ts";
import { failSpan } from "../telemetry/pai-telemetry.ts";
import type { ToolEntry } from "../tools/tool-context.ts";
import { parseToolInput } from "../tools/tool-input-schema.ts";
import { ToolFailSignal, ToolSuspendSignal } from "../tools/tool-signals.ts";
import { createCallContext } from "./call-context.ts";
import { isWithin } from "./call-scope.ts";
import { inCallSpan } from "./call-span.ts";
import { finishCall } from "./finish-call.ts";
import { createInnerCalls } from "./inner-calls.ts";
import type { CallFrame, PipelineCall, PipelineOutcome, Settled } from "./pipeline-call.ts";
import { GENERIC_TOOL_ERROR } from "./redaction.ts";
import { allEnabled } from "./resolve-enabled.ts";
import type { RunState } from "./run-state.ts";

/** A failure the pipeline settles a call with. */
type Failed = Extract<Settled, { type: "error" }>;

/** What `execute` came to: it settled, it suspended itself, or it stopped because another call waits. */
type Executed = Settled | { type: "suspended"; signal: ToolSuspendSignal } | { type: "blocked" };

/**
 * The pipeline every call of a run goes through, the model's calls and each call below one (`ctx.tools.x`, a
 * code-mode program's tool call): recheck `enabled` → input → context (`mapContext`, `contextSchema`) →
 * `execute(ctx)` → `afterToolResult` → `outputSchema` → `onOutput`. A call that waited and was answered enters it
 * with its answer: a resume runs `execute` again, any other answer settles it at once. A call that waits (its own
 * `ctx.suspend`, a client-executed tool, or a call below it) records the wait on its scope and does not settle.
 */
export interface CallPipeline {
  run(call: PipelineCall): Promise<PipelineOutcome>;
}

/** Creates the call pipeline of one run. */
export function createCallPipeline(state: RunState): CallPipeline {
  const signal = state.controller.signal;
  const inner = createInnerCalls({ state, runPipeline });

  function runPipeline(call: PipelineCall): Promise<PipelineOutcome> {
    return inCallSpan(state, call, (traceContext) => runCall(call, traceContext));
  }

  async function runCall(call: PipelineCall, traceContext: Context): Promise<PipelineOutcome> {
    const { definition, scope, key } = call;
    const answer = call.answered?.answer as PendingActionAnswer | undefined;
    if (answer && answer.type !== "resume") return answeredOutcome(state, call, answer);
    const admitted = await admit(state, call);
    if (admitted.type === "error") return admitted;
    const { input } = admitted;
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
      context = await contextOf(state, call);
    } catch (error) {
      await reportToolError(state, call, error);
      return { type: "error", message: GENERIC_TOOL_ERROR, kind: "thrown" };
    }
    const frame: CallFrame = { call, context, traceContext, next: 0, suspended: undefined };
    const executed = await execute(frame, input, answer);
    // A call below this one waits: this call cannot settle, whatever its execute made of that.
    if (scope.wait && isWithin(scope.wait.key, key)) return { type: "wait" };
    if (executed.type === "suspended") return suspendOwn(call, input, executed.signal);
    // Another call waits, and this one stopped because of it: it runs again on resume.
    if (executed.type === "blocked") return { type: "wait" };
    return finishCall(state, call, executed, input);
  }

  /** Runs `execute` with its `ctx` and reads what it returned or threw. */
  async function execute(
    frame: CallFrame,
    input: unknown,
    answer: PendingActionAnswer | undefined,
  ): Promise<Executed> {
    const { call } = frame;
    const { scope } = call;
    const entry: ToolEntry =
      answer?.type === "resume"
        ? { type: "resume", name: call.answered!.name, resume: answer.resume }
        : { type: "initial" };
    const suspendHistory = call.answered?.suspendHistory ?? [];
    try {
      const ctx = createCallContext(state, { frame, input, entry, suspendHistory, inner });
      // (`execute` is there: a tool without one is a client-executed tool, whose call waits before this.)
      return { type: "output", output: await call.definition.execute!(ctx as never) };
    } catch (error) {
      const diverged = scope.diverged;
      if (diverged && error === diverged)
        return { type: "error", message: diverged.message, kind: "planned" };
      if (ToolFailSignal.isInstance(error))
        return { type: "error", message: error.message, kind: "planned", code: error.code };
      if (ToolSuspendSignal.isInstance(error) && error === frame.suspended)
        return { type: "suspended", signal: error };
      // A suspension from below or beside it, while a call waits: the call that waits settles the matter.
      if (ToolSuspendSignal.isInstance(error) && scope.wait) return { type: "blocked" };
      if (signal.aborted) throw error;
      await reportToolError(state, call, error);
      // A capability that could not be provisioned is told as it is: the model and the user see why.
      const failure = provisionFailureOf(error);
      return failure
        ? { type: "error", message: failure.message, kind: "thrown", end: failure.end }
        : { type: "error", message: GENERIC_TOOL_ERROR, kind: "thrown" };
    }
  }

  /** The call's own `ctx.suspend`: its payload checked against `suspendSchema`, then recorded as the call's wait. */
  async function suspendOwn(
    call: PipelineCall,
    input: unknown,
    suspension: ToolSuspendSignal,
  ): Promise<PipelineOutcome> {
    const { definition } = call;
    let payload = suspension.payload;
    if (definition.suspendSchema) {
      const parsed = await definition.suspendSchema.safeParseAsync(payload);
      if (!parsed.success) {
        const error = new PaiError(
          "INVALID_ARGUMENT",
          `tool "${call.label}" (id "${definition.id}") suspended with a payload that does not match its suspendSchema: ${z.prettifyError(parsed.error)}`,
          { cause: parsed.error },
        );
        await reportToolError(state, call, error);
        return { type: "error", message: GENERIC_TOOL_ERROR, kind: "thrown" };
      }
      payload = parsed.data;
    }
    call.scope.waitFor({
      key: call.key,
      path: call.path,
      toolId: definition.id,
      input,
      kind: "suspend",
      name: suspension.suspendName,
      payload,
      suspendHistory: call.answered?.suspendHistory ?? [],
    });
    return { type: "wait" };
  }

  return { run: runPipeline };
}

/** The call's gates, then (for an inner call) its input: the input it goes on with, or a planned failure. */
async function admit(
  state: RunState,
  call: PipelineCall,
): Promise<{ type: "admitted"; input: unknown } | Failed> {
  if (!(await allEnabled(call.gates, state.resolverArgs))) {
    return {
      type: "error",
      message: `The tool "${call.label}" is not available.`,
      kind: "planned",
      code: "TOOL_DISABLED",
    };
  }
  if (!call.validateInput) return { type: "admitted", input: call.input };
  const parsed = await parseToolInput(call.definition.inputSchema, call.input);
  if (parsed.success) return { type: "admitted", input: parsed.data };
  return {
    type: "error",
    message: `nested tool "${call.label}": ${parsed.message}`,
    kind: "planned",
    code: "INVALID_INPUT",
  };
}

/** An answer other than resume, for a call that waited: the outcome a top-level call gets for it. */
function answeredOutcome(
  state: RunState,
  call: PipelineCall,
  answer: Exclude<PendingActionAnswer, { type: "resume" }>,
): Promise<Settled> | Settled {
  switch (answer.type) {
    case "success":
      return finishCall(state, call, { type: "output", output: answer.output }, call.input);
    case "skip":
      return finishCall(
        state,
        call,
        { type: "output", output: answer.output ?? { skipped: true } },
        call.input,
      );
    case "fail":
      return finishCall(state, call, { type: "error", message: answer.message, kind: "planned" }, call.input);
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

/** The context `execute` gets: the caller's, the registration's `mapContext`, or the runtime context, checked. */
async function contextOf(state: RunState, call: PipelineCall): Promise<unknown> {
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

/** Reports an unplanned error of a call, and records it on the call's span (the active one). */
function reportToolError(state: RunState, call: PipelineCall, error: unknown): Promise<void> {
  const span = trace.getActiveSpan();
  if (span) failSpan(span, error);
  return state.reportError(error, { phase: "tool", toolName: call.label, toolCallId: call.toolCallId });
}
