import { type Context, context, SpanStatusCode, trace } from "@opentelemetry/api";
import { activeTelemetryFlags, failSpan, jsonAttribute, startPaiSpan } from "../telemetry/pai-telemetry.ts";
import type { PipelineCall, PipelineOutcome } from "./pipeline-call.ts";
import type { RunState } from "./run-state.ts";

/**
 * Runs one call of the pipeline in its `pai.tool` span, below the call that made it (a nested tool's, a code-mode
 * program's, a subagent's caller) or, for a model's call, below the active context (the AI SDK's `execute_tool`
 * span when the AI SDK is traced, the run's span otherwise). `run` gets the context the call's own work runs in.
 * The span says how the call came out (`pai.tool.outcome`: output, error, waiting, cancelled), and a failure's code;
 * the call's input and output only when the app opted in (`recordInputs`, `recordOutputs`).
 */
export async function inCallSpan(
  state: RunState,
  call: PipelineCall,
  run: (traceContext: Context) => Promise<PipelineOutcome>,
): Promise<PipelineOutcome> {
  const parent = call.traceParent ?? context.active();
  const flags = activeTelemetryFlags(parent);
  const span = startPaiSpan("pai.tool", {
    parent,
    attributes: {
      "pai.tool.id": call.definition.id,
      "pai.tool.name": call.path.at(-1) ?? call.label,
      "pai.tool.call_id": call.toolCallId,
      "pai.tool.path": call.path,
      "pai.run.id": state.runId,
      "pai.thread.id": state.threadId,
      ...(call.registration ? { "pai.tool.registration": call.registration.name } : {}),
      ...(call.answered ? { "pai.tool.entry": "resume" } : {}),
      ...(flags.recordInputs ? { "pai.tool.input": jsonAttribute(call.input) } : {}),
    },
  });
  if (!span.isRecording()) return run(parent);
  const traceContext = trace.setSpan(parent, span);
  try {
    const outcome = await context.with(traceContext, () => run(traceContext));
    span.setAttribute("pai.tool.outcome", outcome.type === "wait" ? "waiting" : outcome.type);
    if (outcome.type === "error") {
      span.setAttribute("pai.tool.error.kind", outcome.kind);
      failSpan(span, undefined, {
        ...(outcome.code !== undefined ? { code: outcome.code } : {}),
        message: outcome.message,
      });
    } else {
      if (outcome.type === "output" && flags.recordOutputs)
        span.setAttribute("pai.tool.output", jsonAttribute(outcome.output));
      span.setStatus({ code: SpanStatusCode.OK });
    }
    return outcome;
  } catch (error) {
    if (state.controller.signal.aborted) span.setAttribute("pai.tool.outcome", "cancelled");
    else failSpan(span, error);
    throw error;
  } finally {
    span.end();
  }
}
