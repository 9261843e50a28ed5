import type { Tool } from "ai";
import type { AgentResolverArgs, RuntimeErrorInfo } from "../agents/define-agent.ts";
import { type NormalizedRegistration, resolveToolSources } from "../agents/tool-registration.ts";
import type { CapabilityMap } from "../capabilities/define-capability.ts";
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
  /**
   * Asks the agent's tool sources again (see `defineToolSource`): a tool one offers now gets its runner, in `runners`,
   * `tools` and the run's registrations. Resolves with the names offered now (the agent's own and the sources'), or
   * `undefined` for an agent without sources.
   */
  refreshTools(): Promise<string[] | undefined>;
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
  // The run's registrations: the agent's own, and what its tool sources offer (added as they offer more).
  const registrations = new Map(agent.registrations);
  const state: RunState = {
    agent: agent.sources.size > 0 ? { ...agent, registrations } : agent,
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
  const addRunner = (registration: NormalizedRegistration) => {
    const runner = createToolRunner({ registration, state, pipeline });
    runners.set(registration.name, runner);
    tools[registration.name] = runner.aiTool;
  };
  for (const registration of agent.registrations.values()) addRunner(registration);
  let offered = new Map<string, NormalizedRegistration[]>();
  const refreshTools = async (): Promise<string[] | undefined> => {
    if (agent.sources.size === 0) return undefined;
    offered = await resolveToolSources({
      agentId: agent.id,
      sources: agent.sources,
      registrations: agent.registrations,
      previous: offered,
      threadId,
      signal: controller.signal,
      capabilitiesFor: (source) => state.capabilitiesFor(capabilityNames(source.capabilities)),
      onError: (error, key) => reportError(error, { phase: "run", toolName: key }),
    });
    const names = [...agent.registrations.keys()];
    for (const registration of [...offered.values()].flat()) {
      names.push(registration.name);
      if (registrations.get(registration.name)?.tool === registration.tool) continue;
      registrations.set(registration.name, registration);
      // `streamText` reads this object at every step (ai@7), so a tool added before a step is offered in it.
      addRunner(registration);
    }
    return names;
  };
  await refreshTools().catch((error: unknown) => {
    detach();
    throw error;
  });
  return {
    deps,
    options,
    state,
    transcript,
    runners,
    tools,
    refreshTools,
    startedAt,
    record,
    checkpoints,
    chunks,
    detach,
  };
}

/** A capability map's capability names by key, as `RunState.capabilitiesFor` takes them. */
function capabilityNames(capabilities: CapabilityMap): Record<string, string> {
  return Object.fromEntries(Object.entries(capabilities).map(([key, capability]) => [key, capability.name]));
}
