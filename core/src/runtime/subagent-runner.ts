import type { PendingActionAnswer } from "../actions/pending-action-answer.ts";
import type { PendingActionRecord, SubagentWait, ThreadStore } from "../threads/thread-store.ts";
import type { AgentRun, RunResult } from "./agent-run.ts";
import { lastAssistantText } from "./last-assistant-text.ts";

/** What a subagent's run came to, for the parent call that ran it. */
export type SubagentOutcome =
  | { type: "ended"; result: { text: string; status: string; runId: string; threadId: string } }
  /** It waits for an answer: the first action pending on its own thread. */
  | { type: "waiting"; threadId: string; action: PendingActionRecord };

/** Runs subagents (`ctx.agents.run`) on behalf of one run, and continues the ones that waited. */
export interface SubagentRunner {
  /** Runs agent `agentId` on a new thread of its own with `prompt` as the user message. */
  start(options: { agentId: string; prompt: string; signal: AbortSignal }): Promise<SubagentOutcome>;
  /**
   * Continues a subagent that waited: passes `answer` on to its action, bound and checked as any answer is
   * (unless the action was answered meanwhile), then waits for its run and says how it stands.
   */
  resume(options: {
    wait: SubagentWait;
    answer: PendingActionAnswer | undefined;
    signal: AbortSignal;
  }): Promise<SubagentOutcome>;
}

/** What the runtime lends the subagents of one run: its caller's way to run and to answer. */
export interface SubagentRunnerOptions {
  store: ThreadStore;
  /** Starts a run as the parent's caller (identity, client data). */
  run(options: { agentId: string; message: string; signal: AbortSignal }): Promise<AgentRun>;
  /** Answers an action of the subagent's thread as the parent's caller; a continuation when none waits any more. */
  respond(options: {
    threadId: string;
    action: PendingActionRecord;
    answer: PendingActionAnswer;
    signal: AbortSignal;
  }): Promise<AgentRun | undefined>;
  /** The run in progress on a thread in this process, if any. */
  runningOn(threadId: string): Promise<RunResult> | undefined;
}

/** Creates the subagent runner of one run. */
export function createSubagentRunner(options: SubagentRunnerOptions): SubagentRunner {
  const { store } = options;

  /** How the subagent's thread stands once its run in this process (if any) has ended. */
  async function standing(threadId: string): Promise<SubagentOutcome> {
    await options.runningOn(threadId)?.catch(() => undefined);
    const [action] = await store.listPendingActions({ threadId, status: "pending" });
    if (action) return { type: "waiting", threadId, action };
    const [runs, messages] = await Promise.all([store.listRuns(threadId), store.loadMessages(threadId)]);
    const last = runs.at(-1);
    return {
      type: "ended",
      result: {
        text: lastAssistantText(messages),
        status: last?.status ?? "completed",
        runId: last?.id ?? "",
        threadId,
      },
    };
  }

  async function ended(run: AgentRun): Promise<SubagentOutcome> {
    const result = await run.done;
    if (result.status === "suspended") return standing(result.threadId);
    const { text, status, runId, threadId } = result;
    return { type: "ended", result: { text, status, runId, threadId } };
  }

  return {
    async start({ agentId, prompt, signal }) {
      return ended(await options.run({ agentId, message: prompt, signal }));
    },
    async resume({ wait, answer, signal }) {
      const action = await store.getPendingAction(wait.actionId);
      if (answer !== undefined && action?.status === "pending") {
        const continuation = await options.respond({ threadId: wait.threadId, action, answer, signal });
        if (continuation) return ended(continuation);
      }
      return standing(wait.threadId);
    },
  };
}
