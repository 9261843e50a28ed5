import { generateId, type LanguageModel, type UIMessage, type UIMessageChunk } from "ai";
import { z } from "zod";
import { assertAnswerBound } from "../actions/answer-binding.ts";
import {
  type PendingActionAnswer,
  pendingActionAnswerSchema,
  statusOfAnswer,
} from "../actions/pending-action-answer.ts";
import { type PublicPendingAction, publicAction } from "../actions/public-action.ts";
import type { Pai, RegisteredAgent } from "../agents/create-pai.ts";
import type { NormalizedRegistration } from "../agents/tool-registration.ts";
import type { CapabilityBinding } from "../capabilities/capability-binding.ts";
import { CapabilityManager } from "../capabilities/capability-manager.ts";
import type { Capability, CapabilityMap } from "../capabilities/define-capability.ts";
import { PaiError } from "../errors/pai-error.ts";
import type { PaiManifest } from "../manifest/manifest.ts";
import { createOwnerRegistry } from "../ownership/owner-registry.ts";
import { createSqliteThreadStore } from "../threads/sqlite-thread-store.ts";
import type {
  PendingActionRecord,
  RunRecord,
  ThreadRecord,
  ThreadStore,
  ToolDataRecord,
} from "../threads/thread-store.ts";
import type { AnyToolDefinition } from "../tools/define-tool.ts";
import type { AgentRun } from "./agent-run.ts";
import { followStoredRun } from "./follow-stored-run.ts";
import { defaultIdentityKey } from "./identity-key.ts";
import { freeGoneOwnersThreads } from "./interrupt-dead-runs.ts";
import { type MessageLimits, messageLimits } from "./message-limits.ts";
import type { CapabilityBindingsOf } from "./required-capabilities.ts";
import { resolveEnabled } from "./resolve-enabled.ts";
import { createRunStopPoller } from "./run-stop-poller.ts";
import { createRuntimeMaintenance } from "./runtime-maintenance.ts";
import { type StartedRun, startRun } from "./start-run.ts";
import { type StopResult, stopAnywhere } from "./stop-anywhere.ts";
import { createSubagentRunner } from "./subagent-runner.ts";
import { createThreadAccess, type ThreadAccess } from "./thread-access.ts";
import { createThreadRunLeases } from "./thread-run-leases.ts";

/** How long an answer waits for a thread another process holds while it may be storing an answer to the same action. */
const ANSWER_WAIT_MS = 5000;

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
  /** Caps on a new user message (bytes, parts), an answer and `clientData`, checked before anything is stored. */
  limits?: MessageLimits;
} & OwnershipOptions &
  CapabilityBindingsOf<PAI>;

/**
 * How a runtime process owns what it makes when several share one store and one engine. Each process has an
 * owner id, written on its runs, its lease records and (through the bindings) its containers, and kept alive by
 * heartbeats in the store. A process never touches a live owner's leases; a dead owner's runs become
 * `interrupted`, its fresh `thread`/`user` leases are taken over and its other containers reaped.
 */
export interface OwnershipOptions {
  /**
   * This process's owner id. Unique per process: reuse one only once the process that had it is gone.
   * @default `<hostname>:<pid>:<8 random hex>`
   */
  ownerId?: string;
  /** How often the process heartbeats, renews its thread leases and hands leases over when asked. @default 5000 */
  heartbeatIntervalMs?: number;
  /**
   * An owner whose last heartbeat is older than this is dead. It is also how long a thread's lease outlives the
   * process running it: a thread whose process died takes new messages after at most this long. An owner on this
   * machine (the same boot) and in this process's pid namespace whose process is gone is dead at once, whatever its
   * heartbeat: a process restarted on the machine of one killed -9 takes over its threads as it starts.
   * @default 20000
   */
  ownerTtlMs?: number;
  /**
   * How often dead owners' runs are interrupted and their leases and containers taken over or freed. A dead
   * process's containers are freed within `ownerTtlMs + reconcileIntervalMs + heartbeatIntervalMs` of its last
   * heartbeat (passes run on the heartbeat's ticks), plus the reaping itself: 40 s with the defaults; those of a
   * process gone from this machine, at this process's start (before `startCapabilities()` resolves) or within
   * `reconcileIntervalMs + heartbeatIntervalMs` of its end.
   * @default 15000
   */
  reconcileIntervalMs?: number;
  /**
   * How often the process checks the store for stops sent to another process (`runtime.stop`, the HTTP stop routes)
   * for the runs it runs: such a run is cancelled, as a local stop cancels it, within this long of the request. Only
   * while the process runs something: one small read per interval about its own runs, none when idle.
   * @default 250
   */
  stopPollIntervalMs?: number;
  /** How long a run waits for another live process to hand over a lease it needs. @default 30000 */
  handoverTimeoutMs?: number;
  /** Errors of the background work (heartbeats, recovery, reaping). @default logs them with `console.error` */
  onBackgroundError?: (error: unknown) => void;
}

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

/** What `runtime.respond` accepts: the answer and the exact call it is bound to. */
export interface RespondOptions {
  threadId: string;
  actionId: string;
  toolCallId: string;
  toolId: string;
  inputHash: string;
  answer: PendingActionAnswer;
  /** The answering caller; must own the thread. */
  identity?: unknown;
  clientData?: unknown;
  signal?: AbortSignal;
}

/** What answering a pending action did. */
export type RespondResult =
  | {
      /** The answer was taken. `run` continues the conversation once no action of the thread waits any more. */
      status: "accepted";
      action: PublicPendingAction;
      run: AgentRun | undefined;
      /** Actions of the thread still waiting for an answer. */
      waiting: number;
    }
  | {
      /** The action had been settled before: nothing happened. */
      status: "already-settled";
      action: PublicPendingAction;
    };

/** A thread as stored: record, messages, runs, tool data and pending actions. */
export interface ThreadSnapshot {
  thread: ThreadRecord;
  messages: UIMessage[];
  runs: RunRecord[];
  toolData: ToolDataRecord[];
  pendingActions: PublicPendingAction[];
}

/** Runs agents against a store and capability bindings. Owns timers and resources: close it. */
export interface AgentRuntime {
  readonly store: ThreadStore;
  readonly pai: Pai;
  /** This process's owner id (on its runs, leases and containers). */
  readonly ownerId: string;
  /** Who may see and act on a thread (what the HTTP handler checks too). */
  readonly access: ThreadAccess;
  /** Starts a run. Rejects with a `PaiError` (nothing runs) on an unknown agent, bad identity or busy thread. */
  run(options: RunOptions): Promise<AgentRun>;
  /** Answers a pending action (approval, client tool output, ...). */
  respond(options: RespondOptions): Promise<RespondResult>;
  /** Pending actions waiting for an answer; with `identity`, only that caller's threads. */
  listPendingActions(query: { threadId: string; identity?: unknown }): Promise<PublicPendingAction[]>;
  /** Cancels a running run of this process; `false` when no such run is active here (see {@link stop}). */
  cancel(runId: string): boolean;
  /**
   * Stops a run wherever it runs: a run of this process is cancelled at once; a run of another live process sharing
   * the store gets a stop request that process acts on within its `stopPollIntervalMs` (the same cancellation, events
   * and cleanup); a dead process's run is marked `interrupted`. `{ threadId }` stops the thread's run in progress.
   * Check the caller's access first (`access`).
   */
  stop(target: { runId: string } | { threadId: string }): Promise<StopResult>;
  /** The run in progress on a thread in this process, if any. */
  activeRun(threadId: string): { runId: string; stream(): ReadableStream<UIMessageChunk> } | undefined;
  /**
   * The run in progress on a thread in any process sharing the store, if any: this process's run as
   * {@link activeRun} has it, another's read from the chunks that process stores (its stream from the first chunk,
   * then live until the run ends or its process dies). Check the caller's access first (`access`).
   */
  followRun(
    threadId: string,
  ): Promise<{ runId: string; ownerId: string; stream(): ReadableStream<UIMessageChunk> } | undefined>;
  /**
   * The stored thread, or `undefined`. With `identity`, only the owner sees it. While a run of this process is in
   * progress on it, `messages` is the thread that run's stream builds on (follow `activeRun(threadId).stream()`
   * for the rest), not the checkpoints the run stores to survive a crash.
   */
  getThread(threadId: string, options?: { identity?: unknown }): Promise<ThreadSnapshot | undefined>;
  /** A caller's threads, newest first. */
  listThreads(query: { identity?: unknown; agentId?: string; limit?: number }): Promise<ThreadRecord[]>;
  /** Ends a thread's `thread`-lifetime capabilities (its sandbox). The conversation stays stored. */
  endThread(threadId: string): Promise<void>;
  /** Deletes a thread, its records, and its capabilities. */
  deleteThread(threadId: string): Promise<void>;
  /**
   * Warms capability bindings and takes over (reattaches) dead owners' fresh leases. Once it resolves, the owners
   * known dead then (those gone from this machine among them) have their runs `interrupted`, their threads free
   * and their other containers reaped.
   */
  startCapabilities(): Promise<void>;
  /**
   * Runs the background maintenance now (it also runs on timers): heartbeat, dead owners' runs marked
   * `interrupted` with their open calls closed, dead owners' leases taken over or freed and their containers
   * reaped, leases handed over when asked, idle leases released.
   */
  sweep(): Promise<void>;
  /** Active capability leases. */
  leases(): ReturnType<CapabilityManager["leases"]>;
  /** Releases `thread`/`user` capability leases idle past their TTL now (it also runs on a timer). */
  sweepIdleCapabilities(): Promise<void>;
  /** The identity key a parsed identity maps to (thread owner, `user` lease key). */
  identityKey(identity: unknown): string;
  manifest(): PaiManifest;
  /**
   * Cancels running runs, releases every capability, closes the store. With `handOver`, this process's
   * `thread`/`user` capability resources (a conversation's sandbox, a user's browser) are left running and
   * recorded instead, for the next process on the same store to take over (a deploy): it reattaches them at its
   * start, or when a thread next uses one.
   */
  close(options?: RuntimeCloseOptions): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Options of `AgentRuntime.close`. */
export interface RuntimeCloseOptions {
  /**
   * Leave `thread`/`user` capability resources running and their leases recorded for the next process (a
   * deploy) instead of removing them. `run` resources are removed either way.
   * @default false
   */
  handOver?: boolean;
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
  const bindings = bindingsOf((options as { capabilities?: Record<string, CapabilityBinding> }).capabilities);
  const declarations = checkCapabilities(pai, bindings);
  const store = options.store ?? createSqliteThreadStore({ path: ".pai/threads.db" });
  const owners = createOwnerRegistry({
    store,
    ...(options.ownerId !== undefined ? { ownerId: options.ownerId } : {}),
    ...(options.ownerTtlMs !== undefined ? { ownerTtlMs: options.ownerTtlMs } : {}),
  });
  const onBackgroundError =
    options.onBackgroundError ?? ((error: unknown) => console.error("[pai] background maintenance:", error));
  const capabilities = new CapabilityManager({
    bindings,
    declarations,
    store,
    owners,
    ...(options.handoverTimeoutMs !== undefined ? { handoverTimeoutMs: options.handoverTimeoutMs } : {}),
    onError: onBackgroundError,
  });
  const identityKeyOf = options.identityKey ?? defaultIdentityKey;
  const limits = messageLimits(options.limits);
  const access = createThreadAccess({ pai, store, identityKey: identityKeyOf });
  const active = new Map<string, StartedRun>();
  const stopRequests = createRunStopPoller({
    store,
    intervalMs: options.stopPollIntervalMs ?? 250,
    onStopRequested: (runId) => active.get(runId)?.cancel(),
    onError: onBackgroundError,
  });
  const threadLeases = createThreadRunLeases({
    store,
    ownerId: owners.ownerId,
    ttlMs: owners.ownerTtlMs,
    async freeIfGone(holder) {
      if (!(await owners.goneOwners()).has(holder)) return false;
      await freeGoneOwnersThreads(store, [holder]);
      // The rest of what it left (its other leases, its containers) is dealt with now rather than at the next pass.
      void maintenance.runNow();
      return true;
    },
    onLost(threadId, runId) {
      active.get(runId)?.cancel();
      onBackgroundError(
        new PaiError(
          "THREAD_BUSY",
          `thread "${threadId}" is no longer this process's: its lease lapsed (not renewed within ownerTtlMs), so its run "${runId}" was stopped`,
          { details: { threadId, runId } },
        ),
      );
    },
  });
  const maintenance = createRuntimeMaintenance({
    store,
    owners,
    threadLeases,
    capabilities,
    intervals: {
      ...(options.heartbeatIntervalMs !== undefined
        ? { heartbeatIntervalMs: options.heartbeatIntervalMs }
        : {}),
      ...(options.reconcileIntervalMs !== undefined
        ? { reconcileIntervalMs: options.reconcileIntervalMs }
        : {}),
    },
    onError: onBackgroundError,
  });
  let closed = false;

  const deps = {
    store,
    ownerId: owners.ownerId,
    capabilities,
    subagents: (caller: { identity: unknown; clientData: unknown }) =>
      createSubagentRunner({
        store,
        run: ({ agentId, message, signal }) =>
          run({ agentId, identity: caller.identity, message, clientData: caller.clientData, signal }),
        respond: async ({ threadId, action, answer, signal }) => {
          const answered = await respond({
            threadId,
            actionId: action.id,
            toolCallId: action.toolCallId,
            toolId: action.toolId,
            inputHash: action.inputHash,
            answer,
            identity: caller.identity,
            clientData: caller.clientData,
            signal,
          });
          return answered.status === "accepted" ? answered.run : undefined;
        },
        runningOn: (threadId) => [...active.values()].find((entry) => entry.threadId === threadId)?.done,
      }),
    onEnded: async (runId: string, threadId: string) => {
      active.delete(runId);
      stopRequests.delete(runId);
      await threadLeases.release(threadId, runId).catch(onBackgroundError);
    },
    onBackgroundError,
  };

  function modelOf(agent: RegisteredAgent): LanguageModel {
    const model = options.overrideModel ?? agent.definition.model ?? options.model;
    if (!model) {
      throw new PaiError(
        "INVALID_ARGUMENT",
        `agent "${agent.id}" has no model and the runtime has no default model`,
      );
    }
    return model;
  }

  /**
   * Reserves a thread for one run at a time, across every process sharing the store (its thread lease;
   * `THREAD_BUSY` when a run has it). The reservation either starts the run `runId` (then held until it ends) or
   * is released.
   */
  async function reserve(threadId: string, runId: string, busyMessage: string) {
    await threadLeases.acquire(threadId, runId, busyMessage);
    let started = false;
    const release = () => threadLeases.release(threadId, runId).catch(onBackgroundError);
    return {
      async start(start: () => Promise<StartedRun>): Promise<AgentRun> {
        try {
          const run = await start();
          started = true;
          active.set(run.runId, run);
          stopRequests.add(run.runId);
          return run;
        } catch (error) {
          await release();
          throw error;
        }
      },
      /** Frees the thread when no run was started under this reservation. */
      async releaseUnlessStarted() {
        if (!started) await release();
      },
    };
  }

  /**
   * Reserves the thread to store an answer. While another process holds it, that process may be storing an
   * answer to the same action: wait (up to {@link ANSWER_WAIT_MS}) until the thread is free or the action is
   * settled, which is returned then (the answer comes too late). `THREAD_BUSY` past the wait.
   */
  async function reserveToAnswer(
    threadId: string,
    runId: string,
    actionId: string,
    signal: AbortSignal | undefined,
  ): Promise<Awaited<ReturnType<typeof reserve>> | PendingActionRecord> {
    const deadline = Date.now() + ANSWER_WAIT_MS;
    for (;;) {
      try {
        return await reserve(threadId, runId, "has a run in progress; answer once it ends");
      } catch (error) {
        if (!PaiError.hasCode(error, "THREAD_BUSY")) throw error;
        const current = await store.getPendingAction(actionId);
        if (current && current.status !== "pending") return current;
        if (Date.now() >= deadline) throw error;
        await delay(25, signal);
      }
    }
  }

  async function run(runOptions: RunOptions): Promise<AgentRun> {
    assertOpen();
    limits.checkRun(runOptions);
    const agent = pai.agent(runOptions.agentId);
    const identity = await access.parseIdentity(agent, runOptions.identity);
    const identityKey = identityKeyOf(identity);
    const model = modelOf(agent);
    const threadId = runOptions.threadId ?? generateId();
    const existing = await store.getThread(threadId);
    if (existing) access.assertOwner(existing, identityKey);
    if (existing && existing.agentId !== agent.id) {
      throw new PaiError(
        "INVALID_ARGUMENT",
        `thread "${threadId}" belongs to agent "${existing.agentId}", not "${agent.id}"`,
      );
    }
    const userMessage = toUserMessage(runOptions.message);
    const now = Date.now();
    const thread: ThreadRecord = existing ?? {
      id: threadId,
      agentId: agent.id,
      ownerKey: identityKey,
      title: titleOf(userMessage),
      createdAt: now,
      updatedAt: now,
    };
    const runId = generateId();
    const reservation = await reserve(threadId, runId, "already has a run in progress");
    return reservation.start(() =>
      startRun(deps, {
        runId,
        agent,
        model,
        identity,
        identityKey,
        thread,
        userMessage,
        clientData: runOptions.clientData,
        signal: runOptions.signal,
      }),
    );
  }

  async function respond(respondOptions: RespondOptions): Promise<RespondResult> {
    assertOpen();
    limits.checkAnswer(respondOptions);
    const parsedAnswer = pendingActionAnswerSchema.safeParse(respondOptions.answer);
    if (!parsedAnswer.success) {
      throw new PaiError("BAD_REQUEST", `not an answer: ${z.prettifyError(parsedAnswer.error)}`);
    }
    const answer = parsedAnswer.data;
    const { threadId, actionId } = respondOptions;
    const action = await store.getPendingAction(actionId);
    const thread = await store.getThread(threadId);
    if (!action || !thread || action.threadId !== threadId) {
      throw new PaiError("UNKNOWN_ACTION", `no pending action "${actionId}" on thread "${threadId}"`);
    }
    const agent = pai.agent(thread.agentId);
    const identity = await access.parseIdentity(agent, respondOptions.identity);
    const identityKey = identityKeyOf(identity);
    access.assertOwner(thread, identityKey);
    assertAnswerBound(action, respondOptions);
    if (action.status !== "pending") return { status: "already-settled", action: publicAction(action) };

    const registration = agent.registrations.get(action.toolName);
    const waiting = waitingCallOf(pai, action, registration);
    const producesOutput = answer.type === "resume" || answer.type === "success" || answer.type === "skip";
    if (producesOutput) {
      if (!registration)
        throw new PaiError("TOOL_DISABLED", `tool "${action.toolName}" is no longer registered`);
      const runtimeContext = await agent.definition.runtimeContext?.({
        identity,
        scope: { threadId, identityKey },
        threadId,
        clientData: respondOptions.clientData,
        signal: respondOptions.signal ?? new AbortController().signal,
      });
      const resolverArgs = {
        runtimeContext,
        identity,
        clientData: respondOptions.clientData,
        threadId,
        signal: respondOptions.signal ?? new AbortController().signal,
      };
      const gates = [registration, ...waiting.gates(agent)];
      const enabled = (await Promise.all(gates.map((gate) => resolveEnabled(gate, resolverArgs)))).every(
        Boolean,
      );
      if (!enabled) {
        throw new PaiError(
          "TOOL_DISABLED",
          `tool "${action.toolName}" is disabled; the action stays pending (cancel or fail it instead)`,
          {
            details: { actionId, toolName: action.toolName },
          },
        );
      }
    }
    const validated = await validateAnswer(answer, action.kind, waiting.tool);
    // Reserved before the answer is stored, so an answer is never taken and then refused as busy.
    const runId = generateId();
    const reservation = await reserveToAnswer(threadId, runId, actionId, respondOptions.signal);
    if (!("start" in reservation)) return { status: "already-settled", action: publicAction(reservation) };
    try {
      const settled = await store.settlePendingAction(actionId, "pending", {
        status: statusOfAnswer(validated),
        answer: validated,
        settledAt: Date.now(),
      });
      if (!settled.changed || !settled.action) {
        return { status: "already-settled", action: publicAction(settled.action ?? action) };
      }
      const waiting = (await store.listPendingActions({ threadId, status: "pending" })).length;
      if (waiting > 0)
        return { status: "accepted", action: publicAction(settled.action), run: undefined, waiting };
      const continuation = await reservation.start(() =>
        startRun(deps, {
          runId,
          agent,
          model: modelOf(agent),
          identity,
          identityKey,
          thread,
          userMessage: undefined,
          clientData: respondOptions.clientData,
          signal: respondOptions.signal,
        }),
      );
      return { status: "accepted", action: publicAction(settled.action), run: continuation, waiting: 0 };
    } finally {
      await reservation.releaseUnlessStarted();
    }
  }

  async function validateAnswer(
    answer: PendingActionAnswer,
    kind: "suspend" | "client",
    tool: { resumeSchema: z.ZodType | undefined; outputSchema: z.ZodType | undefined } | undefined,
  ): Promise<PendingActionAnswer> {
    if (answer.type === "resume") {
      if (kind !== "suspend") throw new PaiError("BAD_REQUEST", "only a suspended tool call can be resumed");
      if (!tool?.resumeSchema) return answer;
      const parsed = await tool.resumeSchema.safeParseAsync(answer.resume);
      if (!parsed.success)
        throw new PaiError(
          "INVALID_INPUT",
          `the resume payload does not match the tool's resumeSchema: ${z.prettifyError(parsed.error)}`,
        );
      return { type: "resume", resume: parsed.data };
    }
    if (answer.type === "success") {
      if (kind !== "client")
        throw new PaiError("BAD_REQUEST", "only a client-executed tool call takes an output");
      if (!tool?.outputSchema) return answer;
      const parsed = await tool.outputSchema.safeParseAsync(answer.output);
      if (!parsed.success)
        throw new PaiError(
          "INVALID_OUTPUT",
          `the submitted output does not match the tool's outputSchema: ${z.prettifyError(parsed.error)}`,
        );
      return { type: "success", output: parsed.data };
    }
    return answer;
  }

  /** The thread if `identity` (when given) owns it. */
  function ownedThread(threadId: string, query: { identity?: unknown }): Promise<ThreadRecord | undefined> {
    return "identity" in query ? access.ownedThread(threadId, query.identity) : store.getThread(threadId);
  }

  function assertOpen(): void {
    if (closed) throw new PaiError("STORE_CLOSED", "the runtime is closed");
  }

  const runtime: AgentRuntime = {
    store,
    pai,
    ownerId: owners.ownerId,
    access,
    run,
    respond,
    async listPendingActions(query) {
      const thread = await ownedThread(query.threadId, query);
      if (!thread) throw unknownThread(query.threadId);
      return (await store.listPendingActions({ threadId: thread.id, status: "pending" })).map(publicAction);
    },
    cancel(runId) {
      const entry = active.get(runId);
      if (!entry) return false;
      entry.cancel();
      return true;
    },
    async stop(target) {
      assertOpen();
      const run =
        "runId" in target
          ? await store.getRun(target.runId)
          : (await store.listRuns(target.threadId)).findLast((candidate) => candidate.status === "running");
      if (!run) {
        if ("runId" in target)
          throw new PaiError("UNKNOWN_RUN", `no run "${target.runId}"`, { details: { runId: target.runId } });
        return { stopped: false, runId: null };
      }
      return stopAnywhere({ store, owners, cancelLocal: (runId) => runtime.cancel(runId) }, run);
    },
    activeRun(threadId) {
      for (const entry of active.values()) {
        if (entry.threadId === threadId) return { runId: entry.runId, stream: () => entry.subscribe() };
      }
      return undefined;
    },
    async followRun(threadId) {
      const local = runtime.activeRun(threadId);
      if (local) return { ...local, ownerId: owners.ownerId };
      const lease = await store.getThreadLease(threadId);
      if (!lease) return undefined;
      return {
        runId: lease.runId,
        ownerId: lease.ownerId,
        stream: () => followStoredRun({ store, threadId, runId: lease.runId }),
      };
    },
    async getThread(threadId, query = {}) {
      const thread = await ownedThread(threadId, query);
      if (!thread) return undefined;
      const running = [...active.values()].find((entry) => entry.threadId === threadId);
      const [messages, runs, toolData, pendingActions] = await Promise.all([
        running ? structuredClone(running.baseMessages()) : store.loadMessages(threadId),
        store.listRuns(threadId),
        store.listToolData({ threadId }),
        store.listPendingActions({ threadId, status: "pending" }),
      ]);
      return { thread, messages, runs, toolData, pendingActions: pendingActions.map(publicAction) };
    },
    async listThreads(query) {
      // A thread is the caller's when the caller's key *for that thread's agent* owns it. An agent whose
      // identity schema rejects the caller has no threads of theirs; naming that agent is an INVALID_IDENTITY.
      const owned = query.agentId
        ? [
            {
              agentId: query.agentId,
              ownerKey: identityKeyOf(await access.parseIdentity(pai.agent(query.agentId), query.identity)),
            },
          ]
        : await Promise.all(
            Object.keys(pai.agents).map(async (agentId) => ({
              agentId,
              ownerKey: await access.identityKeyFor(pai.agent(agentId), query.identity),
            })),
          );
      const lists = await Promise.all(
        owned.flatMap(({ agentId, ownerKey }) =>
          ownerKey === undefined
            ? []
            : [store.listThreads({ ownerKey, agentId, ...(query.limit ? { limit: query.limit } : {}) })],
        ),
      );
      const threads = lists.flat().sort((a, b) => b.updatedAt - a.updatedAt);
      return query.limit ? threads.slice(0, query.limit) : threads;
    },
    endThread: (threadId) => capabilities.endThread(threadId),
    async deleteThread(threadId) {
      for (const entry of active.values()) if (entry.threadId === threadId) entry.cancel();
      await Promise.allSettled(
        [...active.values()].filter((entry) => entry.threadId === threadId).map((entry) => entry.done),
      );
      await capabilities.endThread(threadId);
      await store.deleteThread(threadId);
    },
    async startCapabilities() {
      await maintenance.started;
      await capabilities.startAll();
    },
    sweep: () => maintenance.runNow(),
    leases: () => capabilities.leases(),
    sweepIdleCapabilities: () => capabilities.sweepIdle(),
    identityKey: (identity) => identityKeyOf(identity),
    manifest: () => pai.manifest(),
    async close(options = {}) {
      if (closed) return;
      closed = true;
      for (const entry of active.values()) entry.cancel();
      await Promise.allSettled([...active.values()].map((entry) => entry.done));
      await Promise.all([maintenance.close(), stopRequests.close()]);
      await capabilities.close(options);
      await owners.remove().catch(() => undefined);
      await store.close();
    },
    [Symbol.asyncDispose]: () => runtime.close(),
  };
  return runtime;
}

/** Resolves after `ms`, or rejects with the signal's reason once it aborts. */
function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * The call a pending action waits on: the top-level call, or (`action.inner`) a call below it — a nested tool of
 * the same agent, whose own registration (if the agent registers its id) gates the answer too, or a subagent's
 * tool, which the subagent's own answer gates. Its tool validates the answer: a call below is found by its id,
 * in the top-level tool's tree, or in the registry for a subagent's.
 */
function waitingCallOf(
  pai: Pai,
  action: PendingActionRecord,
  registration: NormalizedRegistration | undefined,
): { tool: AnyToolDefinition | undefined; gates(agent: RegisteredAgent): NormalizedRegistration[] } {
  const inner = action.inner;
  if (!inner) return { tool: registration?.tool, gates: () => [] };
  const subagent = action.journal?.some(
    (entry) => entry.key === inner.key && entry.state === "waiting" && entry.subagent !== undefined,
  );
  if (subagent) {
    const trees = Object.keys(pai.agents).flatMap((agentId) =>
      [...pai.agent(agentId).registrations.values()].map((candidate) => candidate.tool),
    );
    return { tool: findTool(trees, inner.toolId), gates: () => [] };
  }
  return {
    tool: registration ? findTool([registration.tool], inner.toolId) : undefined,
    gates: (agent) => {
      const own = [...agent.registrations.values()].find((candidate) => candidate.tool.id === inner.toolId);
      return own ? [own] : [];
    },
  };
}

/** The tool with id `toolId` among `tools` and their nested tools at any depth. */
function findTool(tools: readonly AnyToolDefinition[], toolId: string): AnyToolDefinition | undefined {
  for (const tool of tools) {
    if (tool.id === toolId) return tool;
    const found = findTool(Object.values(tool.tools), toolId);
    if (found) return found;
  }
  return undefined;
}

function unknownThread(threadId: string): PaiError {
  return new PaiError("NOT_FOUND", `no thread "${threadId}"`, { details: { threadId } });
}

function bindingsOf(map: Record<string, CapabilityBinding> | undefined): Map<string, CapabilityBinding> {
  const bindings = new Map<string, CapabilityBinding>();
  for (const [key, binding] of Object.entries(map ?? {})) {
    if (binding.capability !== key) {
      throw new PaiError(
        "INVALID_ARGUMENT",
        `capabilities.${key} is a binding for "${binding.capability}"; key it by its capability name`,
      );
    }
    bindings.set(key, binding);
  }
  return bindings;
}

/** Fails creation when a registered tool needs a capability the runtime has no binding for. */
function checkCapabilities(
  pai: Pai,
  bindings: ReadonlyMap<string, CapabilityBinding>,
): Map<string, Capability> {
  const declarations = new Map<string, Capability>();
  for (const agentId of Object.keys(pai.agents)) {
    for (const registration of pai.agent(agentId).registrations.values()) {
      for (const capability of capabilitiesOfTree(registration.tool)) {
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

/** The capabilities a tool and its nested tools use. */
function capabilitiesOfTree(tool: AnyToolDefinition): Capability[] {
  return [
    ...Object.values(tool.capabilities as CapabilityMap),
    ...Object.values(tool.tools).flatMap((child) => capabilitiesOfTree(child)),
  ];
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
