import { tool as aiTool, type Schema, type Tool, zodSchema } from "ai";
import { z } from "zod";
import type { ToolResultEvent } from "../agents/define-agent.ts";
import type { NormalizedRegistration } from "../agents/tool-registration.ts";
import type { CapabilityMap } from "../capabilities/define-capability.ts";
import { PaiError } from "../errors/pai-error.ts";
import type { ToolDataEntry, ToolExecuteContext } from "../tools/tool-context.ts";
import { ToolFailSignal, ToolSuspendSignal } from "../tools/tool-signals.ts";
import { GENERIC_TOOL_ERROR, ToolCallError } from "./redaction.ts";
import { resolveEnabled } from "./resolve-enabled.ts";
import { type RunState, stopRun } from "./run-state.ts";

type Outcome =
  | { type: "output"; output: unknown }
  | { type: "error"; message: string; kind: NonNullable<ToolResultEvent["error"]>["kind"]; cause?: unknown };

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

/**
 * Wraps one registration as an AI SDK tool whose `execute` runs PAI's pipeline:
 * recheck `enabled` → context (`mapContext`, `contextSchema`) → `execute(ctx)` → `afterToolResult`
 * → `outputSchema` → `onOutput`. `toModelOutput` and the tool id (`toolMetadata.paiToolId`) ride along.
 */
export function createExecutableTool(registration: NormalizedRegistration, state: RunState): Tool {
  const { tool, name } = registration;
  return aiTool({
    description: tool.description,
    inputSchema: inputSchemaOf(tool.inputSchema),
    metadata: { paiToolId: tool.id },
    ...(tool.toModelOutput
      ? {
          toModelOutput: (options: { toolCallId: string; input: unknown; output: unknown }) =>
            tool.toModelOutput!(options),
        }
      : {}),
    ...(tool.execute
      ? {
          execute: (input: unknown, options: { toolCallId: string; abortSignal?: AbortSignal }) =>
            executeCall(registration, state, input, options.toolCallId),
        }
      : {}),
  } as Tool) as Tool;

  async function executeCall(
    registration: NormalizedRegistration,
    state: RunState,
    input: unknown,
    toolCallId: string,
  ): Promise<unknown> {
    const outcome = await settle(await runExecute(input, toolCallId), input, toolCallId);
    if (outcome.type === "error") throw new ToolCallError(outcome.message);
    if (registration.onOutput) {
      try {
        await registration.onOutput({
          ...state.resolverArgs,
          input: input as never,
          output: outcome.output as never,
          tool: { name, id: tool.id },
          call: { toolCallId },
        });
      } catch (error) {
        await state.reportError(error, { phase: "on-output", toolName: name, toolCallId });
        stopRun(state, { type: "failed", error });
        throw new ToolCallError(GENERIC_TOOL_ERROR);
      }
    }
    return outcome.output;
  }

  async function runExecute(input: unknown, toolCallId: string): Promise<Outcome> {
    const signal = state.controller.signal;
    if (!(await resolveEnabled(registration, state.resolverArgs))) {
      return { type: "error", message: `The tool "${name}" is not available.`, kind: "planned" };
    }
    let context: unknown;
    try {
      context = await toolContext(input);
    } catch (error) {
      await state.reportError(error, { phase: "tool", toolName: name, toolCallId });
      return { type: "error", message: GENERIC_TOOL_ERROR, kind: "thrown", cause: error };
    }
    const ctx = buildContext(input, context, toolCallId, signal);
    try {
      const output = await tool.execute!(ctx as never);
      return { type: "output", output };
    } catch (error) {
      if (ToolFailSignal.isInstance(error)) {
        return { type: "error", message: error.message, kind: "planned" };
      }
      if (ToolSuspendSignal.isInstance(error)) throw error;
      if (signal.aborted) throw error;
      await state.reportError(error, { phase: "tool", toolName: name, toolCallId });
      return { type: "error", message: GENERIC_TOOL_ERROR, kind: "thrown", cause: error };
    }
  }

  async function toolContext(_input: unknown): Promise<unknown> {
    const mapped = registration.mapContext
      ? await registration.mapContext(state.resolverArgs)
      : state.resolverArgs.runtimeContext;
    if (!tool.contextSchema) return mapped;
    const parsed = await tool.contextSchema.safeParseAsync(mapped);
    if (parsed.success) return parsed.data;
    throw new PaiError(
      "INVALID_CONTEXT",
      `tool "${name}" (id "${tool.id}") of agent "${state.agent.id}": the ${registration.mapContext ? "mapped" : "runtime"} context does not match its contextSchema: ${z.prettifyError(parsed.error)}`,
      { cause: parsed.error, details: { toolName: name, toolId: tool.id } },
    );
  }

  async function settle(outcome: Outcome, input: unknown, toolCallId: string): Promise<Outcome> {
    let settled = outcome;
    const hook = state.agent.definition.lifecycle.afterToolResult;
    if (hook) {
      const event: ToolResultEvent = {
        name,
        toolId: tool.id,
        toolCallId,
        input,
        output: outcome.type === "output" ? outcome.output : undefined,
        ...(outcome.type === "error" ? { error: { message: outcome.message, kind: outcome.kind } } : {}),
      };
      const override = await hook(event, state.resolverArgs);
      if (override && "output" in override) settled = { type: "output", output: override.output };
      else if (override && "error" in override)
        settled = { type: "error", message: override.error, kind: "planned" };
    }
    if (settled.type === "output" && tool.outputSchema) {
      const parsed = await tool.outputSchema.safeParseAsync(settled.output);
      if (!parsed.success) {
        const error = new PaiError(
          "INVALID_OUTPUT",
          `tool "${name}" (id "${tool.id}") returned output that does not match its outputSchema: ${z.prettifyError(parsed.error)}`,
          { cause: parsed.error, details: { toolName: name, toolId: tool.id } },
        );
        await state.reportError(error, { phase: "tool", toolName: name, toolCallId });
        return { type: "error", message: GENERIC_TOOL_ERROR, kind: "invalid-output", cause: error };
      }
      settled = { type: "output", output: parsed.data };
    }
    return settled;
  }

  function buildContext(
    input: unknown,
    context: unknown,
    toolCallId: string,
    signal: AbortSignal,
  ): ToolExecuteContext<unknown, unknown, CapabilityMap> {
    const capabilityNames = Object.fromEntries(
      Object.entries(tool.capabilities as CapabilityMap).map(([key, capability]) => [key, capability.name]),
    );
    return {
      input,
      context,
      signal,
      thread: { threadId: state.threadId, runId: state.runId, toolCallId, toolName: name },
      agentId: state.agent.id,
      entry: { type: "initial" },
      fail(message, options) {
        throw new ToolFailSignal(message, options?.code);
      },
      suspend(payload, options) {
        throw new ToolSuspendSignal(payload, options?.name ?? "default");
      },
      suspendHistory: [],
      data: {
        write: async (channel, data) => {
          if (!(await resolveEnabled(registration, state.resolverArgs))) {
            throw new PaiError("TOOL_DISABLED", `tool "${name}" is disabled; it cannot write tool data`);
          }
          const schema = tool.dataSchemas?.[channel];
          const value = schema ? schema.parse(data) : data;
          const record = await state.store.appendToolData({
            threadId: state.threadId,
            runId: state.runId,
            toolCallId,
            toolId: tool.id,
            channel,
            data: value,
            createdAt: Date.now(),
          });
          state.writer?.write({
            type: `data-${channel}`,
            data: { toolCallId, toolId: tool.id, toolName: name, seq: record.seq, value },
          } as never);
        },
        list: async (channel, options) => {
          const records = await state.store.listToolData({
            threadId: state.threadId,
            channel,
            ...(options?.toolCallId ? { toolCallId: options.toolCallId } : {}),
          });
          return records
            .filter((record) => options?.toolCallId !== undefined || record.toolId === tool.id)
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
      capabilities: state.capabilitiesFor(name, capabilityNames) as never,
      tools: {},
      agents: state.agents,
    };
  }
}
