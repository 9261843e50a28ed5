import type { UIMessage } from "ai";
import type { RunResult } from "./agent-run.ts";
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
  const messages = transcript.close(state.pendingToolCallIds);
  const status = runStatusOf({
    stopReason: state.stopReason,
    aborted: state.controller.signal.aborted,
    modelError,
    suspended: state.pendingActions.length > 0,
  });
  if (modelError !== undefined && status === "failed")
    await state.reportError(modelError, { phase: "model" });
  const error =
    status === "failed"
      ? redactedMessage(state.stopReason?.type === "failed" ? state.stopReason.error : modelError)
      : undefined;
  const endedAt = Date.now();
  await state.store.commitRun({
    thread: { ...thread, updatedAt: endedAt },
    messages,
    run: {
      id: state.runId,
      threadId: thread.id,
      agentId: state.agent.id,
      status,
      startedAt: run.startedAt,
      endedAt,
      error,
    },
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

function lastAssistantText(messages: UIMessage[]): string {
  const last = messages.at(-1);
  if (last?.role !== "assistant") return "";
  return last.parts.map((part) => (part.type === "text" ? part.text : "")).join("");
}
