import { z } from "zod";
import type { ToolResultEvent } from "../agents/define-agent.ts";
import { PaiError } from "../errors/pai-error.ts";
import type { PipelineCall, Settled } from "./pipeline-call.ts";
import { GENERIC_TOOL_ERROR } from "./redaction.ts";
import { type RunState, stopRun } from "./run-state.ts";

/** afterToolResult → outputSchema → onOutput: the tail every settled call goes through. */
export async function finishCall(
  state: RunState,
  call: PipelineCall,
  executed: Settled,
  input: unknown,
): Promise<Settled> {
  const outcome = await checkOutput(state, call, await afterToolResult(state, call, executed, input));
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

/** The agent's `afterToolResult` hook, which may turn a failure into an output or an output into a failure. */
async function afterToolResult(
  state: RunState,
  call: PipelineCall,
  outcome: Settled,
  input: unknown,
): Promise<Settled> {
  const hook = state.agent.definition.lifecycle.afterToolResult;
  if (!hook) return outcome;
  const event: ToolResultEvent = {
    name: call.label,
    toolId: call.definition.id,
    toolCallId: call.toolCallId,
    path: call.path,
    input,
    output: outcome.type === "output" ? outcome.output : undefined,
    ...(outcome.type === "error" ? { error: { message: outcome.message, kind: outcome.kind } } : {}),
  };
  const override = await hook(event, state.resolverArgs);
  if (override && "output" in override) return { type: "output", output: override.output };
  if (override && "error" in override) return { type: "error", message: override.error, kind: "planned" };
  return outcome;
}

/** An output checked against the tool's `outputSchema` (a mismatch is reported and fails the call). */
async function checkOutput(state: RunState, call: PipelineCall, settled: Settled): Promise<Settled> {
  const { definition } = call;
  if (settled.type !== "output" || !definition.outputSchema) return settled;
  const parsed = await definition.outputSchema.safeParseAsync(settled.output);
  if (parsed.success) return { type: "output", output: parsed.data };
  const error = new PaiError(
    "INVALID_OUTPUT",
    `tool "${call.label}" (id "${definition.id}") returned output that does not match its outputSchema: ${z.prettifyError(parsed.error)}`,
    { cause: parsed.error, details: { toolName: call.label, toolId: definition.id } },
  );
  await state.reportError(error, { phase: "tool", toolName: call.label, toolCallId: call.toolCallId });
  return { type: "error", message: GENERIC_TOOL_ERROR, kind: "invalid-output" };
}
