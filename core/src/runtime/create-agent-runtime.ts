import { randomUUID } from "node:crypto";
import type { LanguageModel, UIMessageChunk } from "ai";
import type { PublicPendingAction } from "../actions/public-action.ts";
import type { Pai, RegisteredAgent } from "../agents/create-pai.ts";
import type { CapabilityBinding } from "../capabilities/capability-binding.ts";
import { CapabilityManager } from "../capabilities/capability-manager.ts";
import {
  createThreadRewinds,
  type ForkResult,
  type ForkThreadOptions,
  type RewindResult,
  type RewindThreadOptions,
} from "../checkpoints/rewind-thread.ts";
import { runtimeCheckpointStore } from "../checkpoints/runtime-checkpoint-store.ts";
import { type CheckpointOptions, createThreadCheckpoints } from "../checkpoints/thread-checkpoints.ts";
import { PaiError } from "../errors/pai-error.ts";
import type { PaiManifest } from "../manifest/manifest.ts";
import { createOwnerRegistry } from "../ownership/owner-registry.ts";
import type { PortPreview } from "../previews/port-preview.ts";
import type { PreviewOptions } from "../previews/preview-options.ts";
import { PreviewRegistry } from "../previews/preview-registry.ts";
import type { TelemetrySettings } from "../telemetry/pai-telemetry.ts";
import { runtimeTelemetry } from "../telemetry/run-telemetry.ts";
import { createSqliteThreadStore } from "../threads/sqlite-thread-store.ts";
import type { CheckpointRecord, ThreadRecord, ThreadStore } from "../threads/thread-store.ts";
import type { AgentRun } from "./agent-run.ts";
import { callerSubagents } from "./caller-subagents.ts";
import { capabilityBindingsOf } from "./capability-bindings.ts";
import { defaultIdentityKey } from "./identity-key.ts";
import { freeGoneOwnersThreads } from "./interrupt-dead-runs.ts";
import { createLocalRuns } from "./local-runs.ts";
import { type MessageLimits, messageLimits } from "./message-limits.ts";
import type { CapabilityBindingsOf } from "./required-capabilities.ts";
import { type RespondOptions, type RespondResult, respondToAction } from "./respond-to-action.ts";
import { createRuntimeMaintenance } from "./runtime-maintenance.ts";
import type { RuntimeParts } from "./runtime-parts.ts";
import { registerRuntimeServices } from "./runtime-services.ts";
import { type RunOptions, startUserRun } from "./start-user-run.ts";
import { runToStop, type StopResult, stopAnywhere } from "./stop-anywhere.ts";
import { createThreadAccess, type ThreadAccess } from "./thread-access.ts";
import {
  activeRunOf,
  followThreadRun,
  listOwnedThreads,
  listThreadActions,
  readThread,
  type ThreadSnapshot,
} from "./thread-reads.ts";
import { createThreadRunLeases } from "./thread-run-leases.ts";

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
  /** Where and how previews of the resources' ports (`sandbox.exposePort`) are served. */
  previews?: PreviewOptions;
  /**
   * Checkpoints of a thread's resources (a sandbox's `/workspace`) taken when each run ends, into a content-addressed
   * store (`createFileCheckpointStore`): the base of rewinding and forking a conversation. On by default, into the
   * thread store's own folder (see `CheckpointOptions.store`); `false` takes none (a rewind then restores messages
   * only).
   */
  checkpoints?: CheckpointOptions | false;
  /**
   * Telemetry: the AI SDK's settings (`isEnabled`, `recordInputs`, `recordOutputs`, `functionId`, `integrations`...),
   * passed as they are to every `streamText` of a run, plus PAI's own opt-ins (`recordCommands`). PAI's spans
   * (`pai.run`, `pai.tool`, `pai.capability.acquire`, `pai.sandbox.*`) and metrics go to the tracer and meter
   * providers the app registered through `@opentelemetry/api`; unset, they are on (no-ops until a provider is
   * registered), record no tool input, output or command text, and the AI SDK follows its own defaults.
   */
  telemetry?: TelemetrySettings;
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
  /**
   * Errors of the background work (heartbeats, recovery, reaping, a recorded resource that could not be reattached).
   * @default logs them with `console.error`
   */
  onBackgroundError?: (error: unknown) => void;
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
  /**
   * Drops the messages after `toMessageId` and restores the thread's resources (its sandbox's files) to the checkpoint
   * taken when that message was the last (or, before the first checkpoint, to new and empty). Takes the thread's run
   * lease (`THREAD_BUSY` while a run is in progress in any process), cancels the pending actions of dropped messages
   * and records a run for what happened. The programs running in the resource are stopped before it is restored
   * (a sandbox's servers, background jobs, terminals and code contexts; `restored[i].stoppedProcesses` names them); a
   * browser's state is not rewound. Only the thread's owner may (another identity: `NOT_FOUND`); a message the
   * thread does not have is `UNKNOWN_MESSAGE`.
   */
  rewindThread(options: RewindThreadOptions): Promise<RewindResult>;
  /**
   * A new thread with the history up to `atMessageId` (default: all of it) and its resources restored from the
   * checkpoint taken there, the original untouched. Only the thread's owner may.
   */
  forkThread(options: ForkThreadOptions): Promise<ForkResult>;
  /** A thread's checkpoints, oldest first (see `checkpoints`). Check the caller's access first (`access`). */
  listCheckpoints(threadId: string): Promise<CheckpointRecord[]>;
  /** The open previews of a thread's resources (`sandbox.exposePort`). Check the caller's access first (`access`). */
  listPreviews(threadId: string): PortPreview[];
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
   * reaped, leases handed over when asked, idle leases released, checkpoint blobs no checkpoint references removed.
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
  const { bindings, declarations } = capabilityBindingsOf(
    pai,
    (options as { capabilities?: Record<string, CapabilityBinding> }).capabilities,
  );
  const store = options.store ?? createSqliteThreadStore({ path: ".pai/threads.db" });
  const owners = createOwnerRegistry({
    store,
    ...(options.ownerId !== undefined ? { ownerId: options.ownerId } : {}),
    ...(options.ownerTtlMs !== undefined ? { ownerTtlMs: options.ownerTtlMs } : {}),
  });
  const onBackgroundError =
    options.onBackgroundError ?? ((error: unknown) => console.error("[pai] background maintenance:", error));
  const previews = new PreviewRegistry(options.previews ?? {});
  const telemetry = runtimeTelemetry(options.telemetry);
  const capabilities = new CapabilityManager({
    previews,
    telemetry: telemetry.flags,
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
      runs.cancel(runId);
      onBackgroundError(
        new PaiError(
          "THREAD_BUSY",
          `thread "${threadId}" is no longer this process's: its lease lapsed (not renewed within ownerTtlMs), so its run "${runId}" was stopped`,
          { details: { threadId, runId } },
        ),
      );
    },
  });
  const checkpointStore =
    options.checkpoints === false ? undefined : runtimeCheckpointStore(options.checkpoints?.store, store);
  const checkpoints =
    checkpointStore &&
    createThreadCheckpoints({
      ...(options.checkpoints || {}),
      store: checkpointStore.blobs,
      threads: store,
      onError: onBackgroundError,
    });
  const runs = createLocalRuns({
    checkpoints,
    store,
    ownerId: owners.ownerId,
    capabilities,
    threadLeases,
    stopPollIntervalMs: options.stopPollIntervalMs ?? 250,
    subagents: (caller) => callerSubagents(parts, caller),
    onBackgroundError,
    telemetry,
  });
  const rewinds = createThreadRewinds({
    store,
    access,
    runs,
    capabilities,
    blobs: checkpointStore?.blobs,
    ownerId: owners.ownerId,
    identityKeyOf: (identity) => identityKeyOf(identity),
  });
  const maintenance = createRuntimeMaintenance({
    store,
    owners,
    threadLeases,
    capabilities,
    checkpoints,
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
  const assertOpen = () => {
    if (closed) throw new PaiError("STORE_CLOSED", "the runtime is closed");
  };
  const parts: RuntimeParts = {
    pai,
    store,
    owners,
    access,
    identityKeyOf,
    limits,
    runs,
    rewinds,
    modelOf: (agent) => modelOf(options, agent),
    assertOpen,
  };

  const runtime: AgentRuntime = {
    store,
    pai,
    ownerId: owners.ownerId,
    access,
    run: (runOptions) => startUserRun(parts, runOptions),
    respond: (respondOptions) => respondToAction(parts, respondOptions),
    listPendingActions: (query) => listThreadActions(parts, query),
    cancel: (runId) => runs.cancel(runId),
    async stop(target) {
      assertOpen();
      const run = await runToStop(store, target);
      if (!run) return { stopped: false, runId: null };
      return stopAnywhere({ store, owners, cancelLocal: (runId) => runs.cancel(runId) }, run);
    },
    activeRun: (threadId) => activeRunOf(parts, threadId),
    followRun: (threadId) => followThreadRun(parts, threadId),
    getThread: (threadId, query = {}) => readThread(parts, threadId, query),
    listThreads: (query) => listOwnedThreads(parts, query),
    listCheckpoints: (threadId) => store.listCheckpoints(threadId),
    rewindThread: (rewindOptions) => {
      assertOpen();
      return rewinds.rewind(rewindOptions);
    },
    forkThread: (forkOptions) => {
      assertOpen();
      return rewinds.fork(forkOptions);
    },
    listPreviews: (threadId) => previews.listThread(threadId),
    endThread: (threadId) => capabilities.endThread(threadId),
    async deleteThread(threadId) {
      await runs.stop(threadId);
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
    async close(closeOptions = {}) {
      if (closed) return;
      closed = true;
      await runs.stop();
      previews.closeAll();
      await Promise.all([maintenance.close(), runs.close()]);
      await capabilities.close(closeOptions);
      await owners.remove().catch(() => undefined);
      await store.close();
      await checkpointStore?.close();
    },
    [Symbol.asyncDispose]: () => runtime.close(),
  };
  registerRuntimeServices(runtime, {
    previews,
    connectPreview(entry, signal) {
      const runId = `preview:${entry.id}:${randomUUID()}`;
      const scope = { runId, threadId: entry.threadId, identityKey: entry.identityKey, signal };
      return capabilities.openPort(entry.capability, scope, entry.port);
    },
    useThreadFacade({ threadId, identityKey, capability, signal }) {
      assertOpen();
      const lifetime = capabilities.lifetimeOf(capability);
      if (lifetime !== "thread" && lifetime !== "user")
        throw new PaiError(
          "INVALID_ARGUMENT",
          `the ${capability} capability lives per ${lifetime}: only a thread's or a user's can be used outside a run`,
        );
      const runId = `use:${randomUUID()}`;
      const facade = capabilities.facade(capability, { runId, threadId, identityKey, signal });
      return { facade: facade as Record<string, unknown>, release: () => capabilities.endRun(runId) };
    },
  });
  return runtime;
}

/** The model a run of `agent` uses: the runtime's override, the agent's own, or the runtime's default. */
function modelOf(
  options: Pick<AgentRuntimeOptions<Pai>, "model" | "overrideModel">,
  agent: RegisteredAgent,
): LanguageModel {
  const model = options.overrideModel ?? agent.definition.model ?? options.model;
  if (!model) {
    throw new PaiError(
      "INVALID_ARGUMENT",
      `agent "${agent.id}" has no model and the runtime has no default model`,
    );
  }
  return model;
}
