import type { ToolEnd } from "../actions/tool-end.ts";
import type { RunResult } from "./agent-run.ts";
import { lastAssistantText } from "./last-assistant-text.ts";
import type { PreparedRun } from "./prepare-run.ts";
import { redactedMessage } from "./redaction.ts";
import type { RunStopReason } from "./run-state.ts";

/** How the run went, as the finalize step reads it. */
export interface RunEnding {
  /** Why the run stopped early, if it did. */
  stopReason: RunStopReason | undefined;
  /** Whether the run's signal fired (Stop, or a failure that aborted it). */
  aborted: boolean;
  /** The first error the model stream reported. */
  modelError: unknown;
  /** Whether calls still wait for an answer. */
  suspended: boolean;
}

/** The status a run ends with: a failure wins, then a Stop, then calls waiting for an answer. */
export function runStatusOf(ending: RunEnding): RunResult["status"] {
  const cancelled = ending.aborted && ending.stopReason?.type !== "failed";
  if (ending.stopReason?.type === "failed") return "failed";
  if (ending.modelError !== undefined && !cancelled) return "failed";
  if (cancelled) return "cancelled";
  if (ending.suspended) return "suspended";
  return "completed";
}

/** The last step of a run: closes the transcript, decides the status, reports errors and commits the thread. */
export async function finalizeRun(run: PreparedRun, modelError: unknown): Promise<RunResult> {
  const { state, transcript, options } = run;
  const { thread } = options;
  const status = runStatusOf({
    stopReason: state.stopReason,
    aborted: state.controller.signal.aborted,
    modelError,
    suspended: state.pendingActions.length > 0,
  });
  const messages = transcript.close({
    waiting: new Set(state.pendingActions.map((action) => action.toolCallId)),
    openCalls: openCallsEnd(status, options.signal),
  });
  if (modelError !== undefined && status === "failed")
    await state.reportError(modelError, { phase: "model" });
  const error =
    status === "failed"
      ? redactedMessage(state.stopReason?.type === "failed" ? state.stopReason.error : modelError)
      : undefined;
  const endedAt = Date.now();
  await run.checkpoints.close();
  // Followers in other processes have the whole stream before the run gives its thread up.
  await run.chunks.close();
  await state.store.commitRun({
    thread: { ...thread, updatedAt: endedAt },
    messages,
    run: { ...run.record, status, endedAt, error },
  });
  return {
    status,
    runId: state.runId,
    threadId: thread.id,
    messages,
    text: lastAssistantText(messages),
    ...(error !== undefined ? { error } : {}),
  };
}

/** How calls still open end: a run that was stopped or failed ends them; one that timed out says so. */
function openCallsEnd(status: RunResult["status"], signal: AbortSignal | undefined): ToolEnd | undefined {
  if (status !== "cancelled" && status !== "failed") return undefined;
  const timedOut = signal?.aborted === true && (signal.reason as { name?: unknown })?.name === "TimeoutError";
  return { reason: timedOut ? "timeout" : "cancelled" };
}
