import { PaiError } from "../errors/pai-error.ts";
import type { OwnerRegistry } from "../ownership/owner-registry.ts";
import type { RunRecord, RunStatus, ThreadStore } from "../threads/thread-store.ts";
import { interruptRun, isDeadRun } from "./interrupt-dead-runs.ts";

/** What a stop request did (`runtime.stop`, the HTTP stop routes). */
export interface StopResult {
  /**
   * True when the run was running and is being stopped: cancelled in this process, or the stop recorded for the live
   * process running it, which cancels it as a local stop does within its `stopPollIntervalMs`. False when it was not
   * running (it had ended, or its process had died: then `status` is `interrupted`).
   */
  stopped: boolean;
  /** The run, or `null` when the thread has no run in progress. */
  runId: string | null;
  /** Where the stopped run runs: `local` this process, `remote` another live process sharing the store. */
  where?: "local" | "remote";
  /** The run's status when the request was answered (`running` for a run being stopped). */
  status?: RunStatus;
}

/** What {@link stopAnywhere} needs of the runtime. */
export interface StopAnywhereOptions {
  store: ThreadStore;
  owners: OwnerRegistry;
  /** Cancels the run when this process runs it; false when it does not. */
  cancelLocal(runId: string): boolean;
}

/**
 * Stops `run` wherever it runs: this process cancels its own at once; a live owner's gets a stop request in the
 * store; a dead owner's (nobody runs it) is ended as `interrupted` now, as the dead-run pass would end it.
 */
export async function stopAnywhere(options: StopAnywhereOptions, run: RunRecord): Promise<StopResult> {
  const { store, owners, cancelLocal } = options;
  const notRunning = (status: RunStatus): StopResult => ({ stopped: false, runId: run.id, status });
  if (run.status !== "running") return notRunning(run.status);
  if (cancelLocal(run.id)) return { stopped: true, runId: run.id, where: "local", status: "running" };
  if (isDeadRun(run, { live: await owners.liveOwners(), self: owners })) {
    await interruptRun(store, run);
  } else if (await store.requestRunStop(run.id)) {
    // A run of this process not registered yet (still starting) picks the request up once it is.
    const where = run.ownerId === owners.ownerId ? "local" : "remote";
    return { stopped: true, runId: run.id, where, status: "running" };
  }
  // It ended meanwhile (or was interrupted, here or by another process): say how.
  return notRunning((await store.getRun(run.id))?.status ?? run.status);
}

/** The run a stop names: the run by id (`UNKNOWN_RUN` when the store has none), or the thread's run in progress. */
export async function runToStop(
  store: ThreadStore,
  target: { runId: string } | { threadId: string },
): Promise<RunRecord | undefined> {
  if (!("runId" in target))
    return (await store.listRuns(target.threadId)).findLast((candidate) => candidate.status === "running");
  const run = await store.getRun(target.runId);
  if (!run)
    throw new PaiError("UNKNOWN_RUN", `no run "${target.runId}"`, { details: { runId: target.runId } });
  return run;
}
