import { tool as aiTool, generateId, type Schema, type Tool, zodSchema } from "ai";
import { z } from "zod";
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
import type { PendingActionKind, PendingActionRecord } from "../threads/thread-store.ts";
import type { AnyToolDefinition } from "../tools/define-tool.ts";
import type { ToolDataEntry, ToolEntry, ToolExecuteContext } from "../tools/tool-context.ts";
import { ToolFailSignal, ToolSuspendSignal } from "../tools/tool-signals.ts";
import { GENERIC_TOOL_ERROR, ToolCallError } from "./redaction.ts";
import { resolveEnabled } from "./resolve-enabled.ts";
import { type RunState, stopRun } from "./run-state.ts";

/** How a tool call settled, as the model and the thread will see it. */
export type CallOutcome =
  | { type: "output"; output: unknown }
  /** `end`: PAI ended the call (a failed provision); recorded on the part for UIs. */
  | { type: "error"; message: string; end?: ToolEnd }
  | { type: "denied"; reason: string | undefined; actionId: string }
  | { type: "pending"; action: PendingActionRecord };

type ExecuteOutcome =
  | { type: "output"; output: unknown }
  | { type: "error"; message: string; kind: NonNullable<ToolResultEvent["error"]>["kind"]; end?: ToolEnd }
  | { type: "suspend"; payload: unknown; name: string };

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
  /** Settles a call whose pending action was answered (re-entering `execute` for a resume). */
  settleAnswered(action: PendingActionRecord, answer: PendingActionAnswer): Promise<CallOutcome>;
}

/**
 * Wraps one registration. A call runs: recheck `enabled` → context (`mapContext`, `contextSchema`) →
 * `execute(ctx)` → `afterToolResult` → `outputSchema` → `onOutput`. `ctx.suspend` and client-executed tools
 * end in a durable pending action. `toModelOutput` and the tool id (`toolMetadata.paiToolId`) ride along.
 */
export function createToolRunner(registration: NormalizedRegistration, state: RunState): ToolRunner {
  const { tool, name } = registration;

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
      if (!tool.execute) {
        return toSdkResult(
          await suspendCall(input, options.toolCallId, "client", undefined, input, []),
          options.toolCallId,
        );
      }
      const ended = state.checkpoint({
        toolCallId: options.toolCallId,
        toolName: name,
        toolId: tool.id,
        input,
      });
      try {
        return toSdkResult(
          await runCall(input, options.toolCallId, { type: "initial" }, []),
          options.toolCallId,
        );
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

  async function runCall(
    input: unknown,
    toolCallId: string,
    entry: ToolEntry,
    suspendHistory: unknown[],
  ): Promise<CallOutcome> {
    const executed = await runExecute(input, toolCallId, entry, suspendHistory);
    if (executed.type === "suspend") {
      return suspendCall(input, toolCallId, "suspend", executed.name, executed.payload, suspendHistory);
    }
    return finish(executed, input, toolCallId);
  }

  /** afterToolResult → outputSchema → onOutput: the tail every settled call goes through. */
  async function finish(
    executed: Exclude<ExecuteOutcome, { type: "suspend" }>,
    input: unknown,
    toolCallId: string,
  ): Promise<CallOutcome> {
    const outcome = await settle(executed, input, toolCallId);
    if (outcome.type === "error")
      return { type: "error", message: outcome.message, ...(outcome.end ? { end: outcome.end } : {}) };
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
        return { type: "error", message: GENERIC_TOOL_ERROR };
      }
    }
    return { type: "output", output: outcome.output };
  }

  async function suspendCall(
    input: unknown,
    toolCallId: string,
    kind: PendingActionKind,
    suspendName: string | undefined,
    payload: unknown,
    suspendHistory: unknown[],
  ): Promise<CallOutcome> {
    if (kind === "suspend" && tool.suspendSchema) {
      const parsed = await tool.suspendSchema.safeParseAsync(payload);
      if (!parsed.success) {
        const error = new PaiError(
          "INVALID_ARGUMENT",
          `tool "${name}" (id "${tool.id}") suspended with a payload that does not match its suspendSchema: ${z.prettifyError(parsed.error)}`,
          { cause: parsed.error },
        );
        await state.reportError(error, { phase: "tool", toolName: name, toolCallId });
        return { type: "error", message: GENERIC_TOOL_ERROR };
      }
      payload = parsed.data;
    }
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
      kind,
      name: suspendName,
      payload,
      suspendHistory,
      status: "pending",
      createdAt: Date.now(),
    };
    await state.store.putPendingAction(action);
    state.pendingToolCallIds.add(toolCallId);
    state.pendingActions.push(action);
    state.transcript.write({ type: "data-pai-action", id: action.id, data: publicAction(action) } as never);
    return { type: "pending", action };
  }

  async function settleAnswered(
    action: PendingActionRecord,
    answer: PendingActionAnswer,
  ): Promise<CallOutcome> {
    const input = action.input;
    switch (answer.type) {
      case "resume":
        return runCall(
          input,
          action.toolCallId,
          { type: "resume", name: action.name ?? "default", resume: answer.resume },
          [...action.suspendHistory, action.payload],
        );
      case "success":
        return finish({ type: "output", output: answer.output }, input, action.toolCallId);
      case "skip":
        return finish(
          { type: "output", output: answer.output ?? { skipped: true } },
          input,
          action.toolCallId,
        );
      case "deny":
        return { type: "denied", reason: answer.reason, actionId: action.id };
      case "cancel":
        return { type: "error", message: answer.reason ?? "The action was cancelled." };
      case "fail":
        return finish({ type: "error", message: answer.message, kind: "planned" }, input, action.toolCallId);
    }
  }

  async function runExecute(
    input: unknown,
    toolCallId: string,
    entry: ToolEntry,
    suspendHistory: unknown[],
  ): Promise<ExecuteOutcome> {
    const signal = state.controller.signal;
    if (!(await resolveEnabled(registration, state.resolverArgs))) {
      return { type: "error", message: `The tool "${name}" is not available.`, kind: "planned" };
    }
    let context: unknown;
    try {
      context = await toolContext();
    } catch (error) {
      await state.reportError(error, { phase: "tool", toolName: name, toolCallId });
      return { type: "error", message: GENERIC_TOOL_ERROR, kind: "thrown" };
    }
    const ctx = buildContext(tool, name, input, context, toolCallId, signal, entry, suspendHistory);
    try {
      const output = await tool.execute!(ctx as never);
      return { type: "output", output };
    } catch (error) {
      if (ToolFailSignal.isInstance(error)) return { type: "error", message: error.message, kind: "planned" };
      if (ToolSuspendSignal.isInstance(error)) {
        return { type: "suspend", payload: error.payload, name: error.suspendName };
      }
      if (signal.aborted) throw error;
      await state.reportError(error, { phase: "tool", toolName: name, toolCallId });
      // A capability that could not be provisioned is told as it is: the model and the user see why.
      const failure = provisionFailureOf(error);
      if (failure) return { type: "error", message: failure.message, kind: "thrown", end: failure.end };
      return { type: "error", message: GENERIC_TOOL_ERROR, kind: "thrown" };
    }
  }

  async function toolContext(): Promise<unknown> {
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

  async function settle(
    outcome: Exclude<ExecuteOutcome, { type: "suspend" }>,
    input: unknown,
    toolCallId: string,
  ): Promise<Exclude<ExecuteOutcome, { type: "suspend" }>> {
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
        return { type: "error", message: GENERIC_TOOL_ERROR, kind: "invalid-output" };
      }
      settled = { type: "output", output: parsed.data };
    }
    return settled;
  }

  /** `ctx.tools`: each child runs in the same call, with its input and output validated by its own schemas. */
  function nestedTools(
    parent: AnyToolDefinition,
    parentName: string,
    context: unknown,
    toolCallId: string,
    signal: AbortSignal,
  ): Record<string, (input: unknown) => Promise<unknown>> {
    return Object.fromEntries(
      Object.entries(parent.tools).map(([key, child]) => {
        const childName = `${parentName}.${key}`;
        const run = async (input: unknown) => {
          const parsedInput = await child.inputSchema.safeParseAsync(input);
          if (!parsedInput.success) {
            throw new PaiError(
              "INVALID_INPUT",
              `nested tool "${childName}": ${z.prettifyError(parsedInput.error)}`,
            );
          }
          if (!child.execute)
            throw new PaiError("INVALID_ARGUMENT", `nested tool "${childName}" has no execute`);
          let childContext = context;
          if (child.contextSchema) {
            const parsedContext = await child.contextSchema.safeParseAsync(context);
            if (!parsedContext.success) {
              throw new PaiError(
                "INVALID_CONTEXT",
                `nested tool "${childName}": the context does not match its contextSchema: ${z.prettifyError(parsedContext.error)}`,
              );
            }
            childContext = parsedContext.data;
          }
          const ctx = buildContext(
            child,
            childName,
            parsedInput.data,
            childContext,
            toolCallId,
            signal,
            { type: "initial" },
            [],
          );
          const output = await child.execute(ctx as never);
          if (!child.outputSchema) return output;
          const parsedOutput = await child.outputSchema.safeParseAsync(output);
          if (!parsedOutput.success) {
            throw new PaiError(
              "INVALID_OUTPUT",
              `nested tool "${childName}" returned output that does not match its outputSchema: ${z.prettifyError(parsedOutput.error)}`,
            );
          }
          return parsedOutput.data;
        };
        return [key, run];
      }),
    );
  }

  /** The `ctx` of `definition`'s execute: the registered tool itself, or one of its nested children. */
  function buildContext(
    definition: AnyToolDefinition,
    toolName: string,
    input: unknown,
    context: unknown,
    toolCallId: string,
    signal: AbortSignal,
    entry: ToolEntry,
    suspendHistory: unknown[],
  ): ToolExecuteContext<unknown, unknown, CapabilityMap> {
    const capabilityNames = Object.fromEntries(
      Object.entries(definition.capabilities as CapabilityMap).map(([key, capability]) => [
        key,
        capability.name,
      ]),
    );
    return {
      input,
      context,
      signal,
      thread: { threadId: state.threadId, runId: state.runId, toolCallId, toolName },
      agentId: state.agent.id,
      entry,
      fail(message, options) {
        throw new ToolFailSignal(message, options?.code);
      },
      suspend(payload, options) {
        throw new ToolSuspendSignal(payload, options?.name ?? "default");
      },
      suspendHistory,
      data: {
        write: async (channel, data) => {
          if (!(await resolveEnabled(registration, state.resolverArgs))) {
            throw new PaiError("TOOL_DISABLED", `tool "${toolName}" is disabled; it cannot write tool data`);
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
            data: { toolCallId, toolId: definition.id, toolName, seq: record.seq, value },
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
      tools: nestedTools(definition, toolName, context, toolCallId, signal) as never,
      agents: state.agents,
    };
  }

  return { aiTool: aiToolDefinition, settleAnswered };
}
