import type { Tool } from "ai";
import type { AgentResolverArgs, RuntimeErrorInfo } from "../agents/define-agent.ts";
import type { LeaseScope } from "../capabilities/lease-scope.ts";
import { PaiError } from "../errors/pai-error.ts";
import type { RunTelemetry } from "../telemetry/run-telemetry.ts";
import type { RunRecord } from "../threads/thread-store.ts";
import { createCallPipeline } from "./call-pipeline.ts";
import { createRunCheckpoints, type RunCheckpoints } from "./run-checkpoints.ts";
import { createRunChunkSink, type RunChunkSink } from "./run-chunk-sink.ts";
import type { RunDependencies, StartRunOptions } from "./run-dependencies.ts";
import type { RunState } from "./run-state.ts";
import { createRunTranscript, type RunTranscript } from "./run-transcript.ts";
import { createThreadFiles } from "./thread-files.ts";
import { createToolRunner, type ToolRunner } from "./tool-runner.ts";

/** A run ready to go: its state, its transcript (messages and stream) and its tools. */
export interface PreparedRun {
  readonly deps: RunDependencies;
  readonly options: StartRunOptions;
  readonly state: RunState;
  readonly transcript: RunTranscript;
  /** Each registration's runner, by registration name. */
  readonly runners: ReadonlyMap<string, ToolRunner>;
  /** The runners as AI SDK tools, for `streamText`. */
  readonly tools: Record<string, Tool>;
  /** When the run started. */
  readonly startedAt: number;
  /** The run as recorded while it goes on. */
  readonly record: RunRecord;
  readonly checkpoints: RunCheckpoints;
  /** Stores the run's stream for followers in other processes. */
  readonly chunks: RunChunkSink;
  /** Stops following the caller's signal. */
  detach(): void;
}

/**
 * The first step of a run: follows the caller's signal, builds the runtime context (rejecting, with nothing
 * started, when it fails), loads the thread and wraps the agent's tools.
 */
export async function prepareRun(
  deps: RunDependencies,
  options: StartRunOptions,
  telemetry: RunTelemetry,
): Promise<PreparedRun> {
  const { agent, identity, identityKey, thread, clientData } = options;
  const threadId = thread.id;
  const { runId } = options;
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
      await agent.definition.onRuntimeError?.(error, { agentId: agent.id, threadId, runId, ...info });
    } catch {
      // an error reporter that throws must not take the run down with it
    }
  };

  let runtimeContext: unknown;
  try {
    runtimeContext = await agent.definition.runtimeContext?.({
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

  const messages = await deps.store.loadMessages(threadId).catch((error: unknown) => {
    detach();
    throw error;
  });
  const startedAt = Date.now();
  const record: RunRecord = {
    id: runId,
    threadId,
    agentId: agent.id,
    status: "running",
    startedAt,
    ownerId: deps.ownerId,
  };
  const pendingToolCallIds = new Set<string>();
  const chunks = createRunChunkSink({ store: deps.store, runId, onError: deps.onBackgroundError });
  const transcript = createRunTranscript({
    messages,
    hidden: pendingToolCallIds,
    continuing: options.userMessage === undefined,
    onChunk: (chunk) => chunks.push(chunk),
  });
  const leaseScope: LeaseScope = {
    runId,
    threadId,
    identityKey,
    signal: controller.signal,
    onStatus: (event) => transcript.write({ type: "data-pai-capability", data: event } as never),
  };
  const state: RunState = {
    agent,
    runId,
    threadId,
    store: deps.store,
    resolverArgs,
    controller,
    stopReason: undefined,
    pendingActions: [],
    pendingToolCallIds,
    transcript,
    checkpoint: (call) => checkpoints.request(call),
    storeCall: (call) => checkpoints.storeNow(call),
    reportError,
    files: createThreadFiles(() => transcript.messages, controller.signal),
    subagents: deps.subagents({ identity, clientData }),
    telemetry,
    capabilitiesFor: (names) =>
      Object.fromEntries(
        Object.entries(names).map(([key, name]) => [key, deps.capabilities.facade(name, leaseScope)]),
      ),
  };
  const checkpoints = createRunCheckpoints({ store: deps.store, transcript, thread, run: record });
  const pipeline = createCallPipeline(state);
  const runners = new Map<string, ToolRunner>();
  const tools: Record<string, Tool> = {};
  for (const registration of agent.registrations.values()) {
    const runner = createToolRunner({ registration, state, pipeline });
    runners.set(registration.name, runner);
    tools[registration.name] = runner.aiTool;
  }
  return {
    deps,
    options,
    state,
    transcript,
    runners,
    tools,
    startedAt,
    record,
    checkpoints,
    chunks,
    detach,
  };
}
