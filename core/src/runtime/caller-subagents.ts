import { respondToAction } from "./respond-to-action.ts";
import type { RuntimeParts } from "./runtime-parts.ts";
import { startUserRun } from "./start-user-run.ts";
import { createSubagentRunner, type SubagentRunner } from "./subagent-runner.ts";

/**
 * The subagent runner of one run (`ctx.agents.run`): its subagents run, and their actions are answered, as the run's
 * caller (identity, client data), through the runtime's own `run` and `respond`.
 */
export function callerSubagents(
  parts: RuntimeParts,
  caller: { identity: unknown; clientData: unknown },
): SubagentRunner {
  return createSubagentRunner({
    store: parts.store,
    run: ({ agentId, message, signal }) =>
      startUserRun(parts, {
        agentId,
        identity: caller.identity,
        message,
        clientData: caller.clientData,
        signal,
      }),
    respond: async ({ threadId, action, answer, signal }) => {
      const answered = await respondToAction(parts, {
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
    runningOn: (threadId) => parts.runs.onThread(threadId)?.done,
  });
}
