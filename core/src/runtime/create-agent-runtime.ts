import {
  convertToModelMessages,
  createUIMessageStream,
  generateId,
  isStepCount,
  type LanguageModel,
  streamText,
  type Tool,
  type UIMessage,
  type UIMessageChunk,
} from "ai";
import { z } from "zod";
import type { Pai, RegisteredAgent } from "../agents/create-pai.ts";
import type { AgentResolverArgs, AnyAgentDefinition, RuntimeErrorInfo } from "../agents/define-agent.ts";
import type { CapabilityBinding } from "../capabilities/capability-binding.ts";
import { CapabilityManager } from "../capabilities/capability-manager.ts";
import type { Capability, CapabilityMap } from "../capabilities/define-capability.ts";
import { PaiError } from "../errors/pai-error.ts";
import type { PaiManifest } from "../manifest/manifest.ts";
import { createSqliteThreadStore } from "../threads/sqlite-thread-store.ts";
import type { RunRecord, ThreadRecord, ThreadStore, ToolDataRecord } from "../threads/thread-store.ts";
import type { AgentRun, RunResult } from "./agent-run.ts";
import { defaultIdentityKey } from "./identity-key.ts";
import { redactedMessage } from "./redaction.ts";
import type { CapabilityBindingsOf } from "./required-capabilities.ts";
import { resolveActiveTools } from "./resolve-enabled.ts";
import type { RunState } from "./run-state.ts";
import { createThreadFiles } from "./thread-files.ts";
import { createExecutableTool } from "./tool-executor.ts";

/** What `createAgentRuntime` accepts. */
export type AgentRuntimeOptions<PAI extends Pai> = {
  /** The agent registry from `createPai`. */
  pai: PAI;
  /** Where threads live. @default a SQLite file at `.pai/threads.db` */
  store?: ThreadStore;
  /** The model for agents that declare none. */
  model?: LanguageModel;
  /** A model that replaces every agent's own (tests, scripted demos). */
  overrideModel?: LanguageModel;
  /** Maps a parsed identity to the key that owns threads and keys `user` capabilities. */
  identityKey?: (identity: unknown) => string;
} & CapabilityBindingsOf<PAI>;

/** What `runtime.run` accepts. */
export interface RunOptions {
  agentId: string;
  /** Continue this thread; a new one is created when left out or unknown. */
  threadId?: string;
  /** The caller, parsed with the agent's `identity` schema. */
  identity?: unknown;
  /** The user's message: text or a full `UIMessage`. */
  message: string | UIMessage;
  /** Untrusted data from the client, passed to resolvers as data only. */
  clientData?: unknown;
  /** Aborting it cancels the run. */
  signal?: AbortSignal;
}

/** A thread as stored: record, messages, runs and tool data. */
export interface ThreadSnapshot {
  thread: ThreadRecord;
  messages: UIMessage[];
  runs: RunRecord[];
  toolData: ToolDataRecord[];
}

/** Runs agents against a store and capability bindings. Owns timers and resources: close it. */
export interface AgentRuntime {
  readonly store: ThreadStore;
  /** Starts a run. Rejects with a `PaiError` (nothing runs) on an unknown agent, bad identity or busy thread. */
  run(options: RunOptions): Promise<AgentRun>;
  /** Cancels a running run; `false` when no such run is active. */
  cancel(runId: string): boolean;
  /** The stored thread, or `undefined`. With `identity`, only the owner sees it. */
  getThread(
    threadId: string,
    options?: { identity?: unknown; agentId?: string },
  ): Promise<ThreadSnapshot | undefined>;
  /** Ends a thread's `thread`-lifetime capabilities (its sandbox). The conversation stays stored. */
  endThread(threadId: string): Promise<void>;
  /** Deletes a thread, its records, and its capabilities. */
  deleteThread(threadId: string): Promise<void>;
  /** Warms capability bindings and reattaches leases recorded before a restart. */
  startCapabilities(): Promise<void>;
  /** Active capability leases. */
  leases(): ReturnType<CapabilityManager["leases"]>;
  manifest(): PaiManifest;
  /** Cancels running runs, releases every capability, closes the store. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

interface ActiveRun {
  runId: string;
  threadId: string;
  controller: AbortController;
  done: Promise<RunResult>;
}

/**
 * Creates a runtime: binds a store (and capabilities) to a registry and runs agents.
 * @example
 * const runtime = createAgentRuntime({ pai, store: createMemoryThreadStore(), model: openai("gpt-4.1-mini") });
 * const run = await runtime.run({ agentId: "assistant", identity: { userId: "u1" }, message: "hi" });
 * const { text } = await run.done;
 */
export function createAgentRuntime<PAI extends Pai>(options: AgentRuntimeOptions<PAI>): AgentRuntime {
  const { pai } = options;
  const bindings = new Map<string, CapabilityBinding>(
    Object.values((options as { capabilities?: Record<string, CapabilityBinding> }).capabilities ?? {}).map(
      (b) => [b.capability, b],
    ),
  );
  const declarations = checkCapabilities(pai, bindings);
  const store = options.store ?? createSqliteThreadStore({ path: ".pai/threads.db" });
  const capabilities = new CapabilityManager({ bindings, declarations, store });
  const identityKeyOf = options.identityKey ?? defaultIdentityKey;
  const active = new Map<string, ActiveRun>();
  const busyThreads = new Set<string>();
  let closed = false;

  async function run(runOptions: RunOptions): Promise<AgentRun> {
    if (closed) throw new PaiError("STORE_CLOSED", "the runtime is closed");
    const agent = pai.agent(runOptions.agentId);
    const definition = agent.definition;
    const identity = await parseIdentity(agent, runOptions.identity);
    const identityKey = identityKeyOf(identity);
    const model = options.overrideModel ?? definition.model ?? options.model;
    if (!model) {
      throw new PaiError(
        "INVALID_ARGUMENT",
        `agent "${agent.id}" has no model and the runtime has no default model`,
      );
    }
    const threadId = runOptions.threadId ?? generateId();
    const existing = await store.getThread(threadId);
    if (existing && existing.ownerKey !== identityKey) {
      throw new PaiError("NOT_FOUND", `no thread "${threadId}"`, { details: { threadId } });
    }
    if (existing && existing.agentId !== agent.id) {
      throw new PaiError(
        "INVALID_ARGUMENT",
        `thread "${threadId}" belongs to agent "${existing.agentId}", not "${agent.id}"`,
      );
    }
    if (busyThreads.has(threadId)) {
      throw new PaiError("THREAD_BUSY", `thread "${threadId}" already has a run in progress`, {
        details: { threadId },
      });
    }
    busyThreads.add(threadId);
    try {
      return await startRun({
        agent,
        definition,
        model,
        identity,
        identityKey,
        threadId,
        existing,
        runOptions,
      });
    } catch (error) {
      busyThreads.delete(threadId);
      throw error;
    }
  }

  async function startRun(args: {
    agent: RegisteredAgent;
    definition: AnyAgentDefinition;
    model: LanguageModel;
    identity: unknown;
    identityKey: string;
    threadId: string;
    existing: ThreadRecord | undefined;
    runOptions: RunOptions;
  }): Promise<AgentRun> {
    const { agent, definition, model, identity, identityKey, threadId, runOptions } = args;
    const runId = generateId();
    const controller = new AbortController();
    const external = runOptions.signal;
    const onExternalAbort = () => controller.abort({ type: "cancelled" });
    if (external?.aborted) onExternalAbort();
    external?.addEventListener("abort", onExternalAbort, { once: true });

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

    const clientData = runOptions.clientData;
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
      external?.removeEventListener("abort", onExternalAbort);
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

    const history = await store.loadMessages(threadId);
    const userMessage = toUserMessage(runOptions.message);
    const inputMessages = [...history, userMessage];
    const now = Date.now();
    const thread: ThreadRecord = args.existing ?? {
      id: threadId,
      agentId: agent.id,
      ownerKey: identityKey,
      title: titleOf(userMessage),
      createdAt: now,
      updatedAt: now,
    };
    await Promise.all([
      store.ensureThread(thread),
      store.createRun({ id: runId, threadId, agentId: agent.id, status: "running", startedAt: now }),
    ]);

    const leaseScope = { runId, threadId, identityKey, signal: controller.signal };
    const state: RunState = {
      agent,
      runId,
      threadId,
      store,
      resolverArgs,
      controller,
      stopReason: undefined,
      writer: undefined,
      reportError,
      files: createThreadFiles(() => inputMessages, controller.signal),
      agents: {
        run: async ({ agentId, prompt }) => {
          const child = await run({
            agentId,
            identity: runOptions.identity,
            message: prompt,
            clientData,
            signal: controller.signal,
          });
          const result = await child.done;
          return { text: result.text, status: result.status, runId: result.runId, threadId: result.threadId };
        },
      },
      capabilitiesFor: (_toolName, names) =>
        Object.fromEntries(
          Object.entries(names).map(([key, name]) => [key, capabilities.facade(name, leaseScope)]),
        ),
    };

    const tools: Record<string, Tool> = {};
    for (const registration of agent.registrations.values()) {
      tools[registration.name] = createExecutableTool(registration, state);
    }

    let modelError: unknown;
    let finalMessages: UIMessage[] = inputMessages;
    const instructions =
      typeof definition.instructions === "function"
        ? await definition.instructions(resolverArgs)
        : definition.instructions;
    const modelMessages = await convertToModelMessages(inputMessages, {
      tools,
      ignoreIncompleteToolCalls: true,
    });

    const uiStream = createUIMessageStream<UIMessage>({
      originalMessages: inputMessages,
      generateId,
      onError: redactedMessage,
      execute: async ({ writer }) => {
        state.writer = writer;
        const result = streamText({
          model,
          ...(instructions !== undefined ? { instructions } : {}),
          messages: modelMessages,
          tools,
          stopWhen: isStepCount(definition.maxSteps),
          abortSignal: controller.signal,
          prepareStep: async ({ stepNumber, messages }) => {
            const activeTools = await resolveActiveTools(agent.registrations.values(), resolverArgs);
            const extra = (await definition.prepareStep?.({ stepNumber, messages })) ?? {};
            return { activeTools, ...extra };
          },
          onError: ({ error }) => {
            modelError ??= error;
          },
        });
        writer.merge(
          result.toUIMessageStream({
            messageMetadata: ({ part }) => (part.type === "start" ? { runId, agentId: agent.id } : undefined),
            onError: redactedMessage,
          }),
        );
      },
      onFinish: ({ messages }) => {
        finalMessages = messages;
      },
    });

    const [clientStream, ownStream] = uiStream.tee();
    const done = (async (): Promise<RunResult> => {
      try {
        await drain(ownStream);
        if (modelError !== undefined && !controller.signal.aborted) {
          await reportError(modelError, { phase: "model" });
        }
        const status: RunResult["status"] =
          state.stopReason?.type === "failed" || (modelError !== undefined && !controller.signal.aborted)
            ? "failed"
            : controller.signal.aborted
              ? "cancelled"
              : "completed";
        const error =
          status === "failed"
            ? redactedMessage(state.stopReason?.type === "failed" ? state.stopReason.error : modelError)
            : undefined;
        const endedAt = Date.now();
        await store.commitRun({
          thread: { ...thread, updatedAt: endedAt },
          messages: finalMessages,
          run: { id: runId, threadId, agentId: agent.id, status, startedAt: now, endedAt, error },
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
        external?.removeEventListener("abort", onExternalAbort);
        active.delete(runId);
        busyThreads.delete(threadId);
        await capabilities.endRun(runId);
      }
    })();
    active.set(runId, { runId, threadId, controller, done });
    return {
      runId,
      threadId,
      stream: clientStream,
      done,
      cancel: () => controller.abort({ type: "cancelled" }),
    };
  }

  async function parseIdentity(agent: RegisteredAgent, identity: unknown): Promise<unknown> {
    const schema = agent.definition.identitySchema as z.ZodType | undefined;
    if (!schema) return identity;
    const parsed = await schema.safeParseAsync(identity);
    if (parsed.success) return parsed.data;
    throw new PaiError(
      "INVALID_IDENTITY",
      `agent "${agent.id}": identity does not match its schema: ${z.prettifyError(parsed.error)}`,
      {
        cause: parsed.error,
        details: { agentId: agent.id },
      },
    );
  }

  async function getThread(threadId: string, query: { identity?: unknown; agentId?: string } = {}) {
    const thread = await store.getThread(threadId);
    if (!thread) return undefined;
    if (query.agentId !== undefined && thread.agentId !== query.agentId) return undefined;
    if ("identity" in query) {
      const identity = await parseIdentity(pai.agent(thread.agentId), query.identity);
      if (identityKeyOf(identity) !== thread.ownerKey) return undefined;
    }
    const [messages, runs, toolData] = await Promise.all([
      store.loadMessages(threadId),
      store.listRuns(threadId),
      store.listToolData({ threadId }),
    ]);
    return { thread, messages, runs, toolData };
  }

  const runtime: AgentRuntime = {
    store,
    run,
    cancel(runId) {
      const entry = active.get(runId);
      if (!entry) return false;
      entry.controller.abort({ type: "cancelled" });
      return true;
    },
    getThread,
    endThread: (threadId) => capabilities.endThread(threadId),
    async deleteThread(threadId) {
      for (const entry of active.values())
        if (entry.threadId === threadId) entry.controller.abort({ type: "cancelled" });
      await capabilities.endThread(threadId);
      await store.deleteThread(threadId);
    },
    startCapabilities: () => capabilities.startAll(),
    leases: () => capabilities.leases(),
    manifest: () => pai.manifest(),
    async close() {
      if (closed) return;
      closed = true;
      for (const entry of active.values()) entry.controller.abort({ type: "cancelled" });
      await Promise.allSettled([...active.values()].map((entry) => entry.done));
      await capabilities.close();
      await store.close();
    },
    [Symbol.asyncDispose]: () => runtime.close(),
  };
  return runtime;
}

/** Fails creation when a registered tool needs a capability the runtime has no binding for. */
function checkCapabilities(
  pai: Pai,
  bindings: ReadonlyMap<string, CapabilityBinding>,
): Map<string, Capability> {
  const declarations = new Map<string, Capability>();
  for (const agentId of Object.keys(pai.agents)) {
    for (const registration of pai.agent(agentId).registrations.values()) {
      for (const capability of Object.values(registration.tool.capabilities as CapabilityMap)) {
        declarations.set(capability.name, capability);
        if (!bindings.has(capability.name)) {
          throw new PaiError(
            "MISSING_CAPABILITY",
            `tool "${registration.name}" of agent "${agentId}" needs capability "${capability.name}", but createAgentRuntime({ capabilities }) has no binding for it`,
            { details: { agentId, toolName: registration.name, capability: capability.name } },
          );
        }
      }
    }
  }
  return declarations;
}

function toUserMessage(message: string | UIMessage): UIMessage {
  if (typeof message !== "string") {
    if (message.role !== "user") throw new PaiError("INVALID_ARGUMENT", "a run starts from a user message");
    return message;
  }
  return { id: generateId(), role: "user", parts: [{ type: "text", text: message }] };
}

function titleOf(message: UIMessage): string | undefined {
  const text = message.parts.find((part) => part.type === "text");
  return text?.type === "text" ? text.text.slice(0, 80) : undefined;
}

function lastAssistantText(messages: UIMessage[]): string {
  const last = messages.at(-1);
  if (last?.role !== "assistant") return "";
  return last.parts
    .filter((part) => part.type === "text")
    .map((part) => (part.type === "text" ? part.text : ""))
    .join("");
}

async function drain(stream: ReadableStream<UIMessageChunk>): Promise<void> {
  const reader = stream.getReader();
  while (!(await reader.read()).done) {
    // consumed for its side effects: the run progresses as the stream is read
  }
}
