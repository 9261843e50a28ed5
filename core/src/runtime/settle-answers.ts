import type { CallOutcome } from "../actions/call-outcome.ts";
import type { PendingActionAnswer } from "../actions/pending-action-answer.ts";
import { endedCall, waitingToolCallIds } from "../actions/tool-part-updates.ts";
import { countActionSettled } from "../telemetry/pai-metrics.ts";
import type { PendingActionRecord, ThreadStore } from "../threads/thread-store.ts";
import type { PreparedRun } from "./prepare-run.ts";

const SUPERSEDED = "The action was cancelled: the user sent a new message.";

/**
 * Settles the thread's calls that waited for an answer: answered actions are applied (a resume — or any answer to
 * a call below the top-level one — runs `execute` again over the call's journal, once: the run claims the action
 * first, and a call whose action another run claimed — that run died applying it — ends as `interrupted`); a call
 * without any action (its run died mid-call) ends as `interrupted`. With `supersede` (a new user message arrived),
 * actions still pending are cancelled first and their calls end at once, without running again (a subagent's own
 * action is cancelled too), so the model never sees an orphan call; without it they stay pending and the run will
 * not call the model.
 */
export async function settleAnswers(run: PreparedRun, options: { supersede: boolean }): Promise<void> {
  const { state, transcript, runners } = run;
  const waiting = waitingToolCallIds(transcript.messages);
  if (waiting.length === 0) return;
  const actions = await state.store.listPendingActions({ threadId: state.threadId });
  for (const toolCallId of waiting) {
    let action = latestAction(actions, toolCallId);
    if (!action) {
      // Open with nothing to wait for: its run died mid-call (not yet found by the dead-run sweep).
      transcript.apply(endedCall(toolCallId, { reason: "interrupted" }));
      continue;
    }
    let superseded = false;
    if (action.status === "pending") {
      if (!options.supersede) {
        state.pendingActions.push(action);
        continue;
      }
      ({ action, superseded } = await supersede(state.store, action));
    }
    const answer = action.answer as PendingActionAnswer | undefined;
    // The run that suspended it, in whichever process: this run goes on from there.
    if (answer && !superseded) state.telemetry.linkTo(action);
    // Running `execute` again happens once: a run that claimed the action before this one died applying it.
    const reenters = !superseded && (answer?.type === "resume" || (answer && action.inner));
    if (reenters && !(await state.store.claimPendingAction(action.id, state.runId))) {
      transcript.apply(endedCall(toolCallId, { reason: "interrupted" }));
      continue;
    }
    const runner = runners.get(action.toolName);
    const outcome: CallOutcome =
      superseded || !answer
        ? { type: "error", message: SUPERSEDED }
        : runner
          ? await runner.settleAnswered(action, answer)
          : { type: "error", message: `The tool "${action.toolName}" is no longer available.` };
    if (outcome.type === "pending") continue;
    transcript.settle({ toolCallId, outcome }, action);
  }
}

/**
 * Cancels a pending action because a new user message arrived, and the subagent's action it stands for, if any.
 * Returns the action as stored afterwards, and whether this cancelled it (another process may have answered it).
 */
async function supersede(
  store: ThreadStore,
  action: PendingActionRecord,
): Promise<{ action: PendingActionRecord; superseded: boolean }> {
  const answer: PendingActionAnswer = { type: "cancel", reason: SUPERSEDED };
  const settled = await store.settlePendingAction(action.id, "pending", {
    status: "cancelled",
    answer,
    settledAt: Date.now(),
  });
  if (!settled.changed) return { action: settled.action ?? action, superseded: false };
  countActionSettled();
  const waiting = action.journal?.find((entry) => entry.key === action.inner?.key);
  const subagent = waiting && waiting.state !== "settled" ? waiting.subagent : undefined;
  const forwarded = subagent ? await store.getPendingAction(subagent.actionId) : undefined;
  if (forwarded?.status === "pending") await supersede(store, forwarded);
  return { action: settled.action ?? action, superseded: true };
}

function latestAction(actions: PendingActionRecord[], toolCallId: string): PendingActionRecord | undefined {
  let latest: PendingActionRecord | undefined;
  for (const action of actions) {
    if (action.toolCallId === toolCallId && (!latest || action.createdAt >= latest.createdAt))
      latest = action;
  }
  return latest;
}
