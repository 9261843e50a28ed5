import type { AgentRun } from "./agent-run.ts";
import type { RunDependencies, StartRunOptions } from "./run-dependencies.ts";
import { createRunStopPoller } from "./run-stop-poller.ts";
import { type StartedRun, startRun } from "./start-run.ts";
import type { ThreadRunLeases } from "./thread-run-leases.ts";

/** A thread reserved for one run: the run starts under it, or the thread is given back. */
export interface RunReservation {
  /** Starts the run under the reserved id; when that fails, the thread is given back and the error rethrown. */
  start(options: Omit<StartRunOptions, "runId">): Promise<AgentRun>;
  /** Gives the thread back unless a run was started under this reservation. */
  releaseUnlessStarted(): Promise<void>;
}

/**
 * The runs in progress in this process. Each runs under its thread's lease (one run of a thread at a time, across
 * every process sharing the store), taken by {@link reserve} and given back when the run ends; while it runs, a stop
 * another process records for it in the store cancels it.
 */
export interface LocalRuns {
  /**
   * Reserves `threadId` for the run `runId` (its thread lease; `THREAD_BUSY` with `busyMessage` when a run of any
   * process has it).
   */
  reserve(threadId: string, runId: string, busyMessage: string): Promise<RunReservation>;
  /** The run in progress on `threadId` in this process, if any. */
  onThread(threadId: string): StartedRun | undefined;
  /** Cancels run `runId` of this process; false when it runs nothing by that id. */
  cancel(runId: string): boolean;
  /** Cancels the runs on `threadId` (every run, without one) and resolves once they have ended. */
  stop(threadId?: string): Promise<void>;
  /** Stops watching the store for stop requests (after {@link stop}). */
  close(): Promise<void>;
}

/** What the runs of this process are started with. */
export interface LocalRunsOptions
  extends Pick<
    RunDependencies,
    "store" | "ownerId" | "capabilities" | "subagents" | "checkpoints" | "onBackgroundError" | "telemetry"
  > {
  threadLeases: ThreadRunLeases;
  /** How often the store is read for stops other processes record for these runs. */
  stopPollIntervalMs: number;
}

/** Creates the registry of this process's runs. */
export function createLocalRuns(options: LocalRunsOptions): LocalRuns {
  const { store, threadLeases, onBackgroundError } = options;
  const active = new Map<string, StartedRun>();
  const stopRequests = createRunStopPoller({
    store,
    intervalMs: options.stopPollIntervalMs,
    onStopRequested: (runId) => active.get(runId)?.cancel(),
    onError: onBackgroundError,
  });
  const deps: RunDependencies = {
    store,
    ownerId: options.ownerId,
    capabilities: options.capabilities,
    subagents: options.subagents,
    checkpoints: options.checkpoints,
    onEnded: async (runId, threadId) => {
      active.delete(runId);
      stopRequests.delete(runId);
      await threadLeases.release(threadId, runId).catch(onBackgroundError);
    },
    onBackgroundError,
    telemetry: options.telemetry,
  };

  return {
    async reserve(threadId, runId, busyMessage) {
      await threadLeases.acquire(threadId, runId, busyMessage);
      let started = false;
      const release = () => threadLeases.release(threadId, runId).catch(onBackgroundError);
      return {
        async start(startOptions) {
          try {
            const run = await startRun(deps, { ...startOptions, runId });
            started = true;
            active.set(run.runId, run);
            stopRequests.add(run.runId);
            return run;
          } catch (error) {
            await release();
            throw error;
          }
        },
        async releaseUnlessStarted() {
          if (!started) await release();
        },
      };
    },
    onThread(threadId) {
      for (const run of active.values()) if (run.threadId === threadId) return run;
      return undefined;
    },
    cancel(runId) {
      const run = active.get(runId);
      if (!run) return false;
      run.cancel();
      return true;
    },
    async stop(threadId) {
      const stopping = [...active.values()].filter(
        (run) => threadId === undefined || run.threadId === threadId,
      );
      for (const run of stopping) run.cancel();
      await Promise.allSettled(stopping.map((run) => run.done));
    },
    close: () => stopRequests.close(),
  };
}
