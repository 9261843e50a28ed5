import type { Pai, RegisteredAgent } from "../agents/create-pai.ts";
import type { NormalizedRegistration } from "../agents/tool-registration.ts";
import type { PendingActionRecord } from "../threads/thread-store.ts";
import type { AnyToolDefinition } from "../tools/define-tool.ts";

/** The call a pending action waits on, as an answer to it is checked. */
export interface WaitingCall {
  /** Its tool, whose schemas validate the answer (`undefined` when it can no longer be found). */
  tool: AnyToolDefinition | undefined;
  /** The registrations of `agent` whose `enabled` gates the answer besides the top-level registration. */
  gates(agent: RegisteredAgent): NormalizedRegistration[];
}

/**
 * The call a pending action waits on: the top-level call, or (`action.inner`) a call below it — a nested tool of
 * the same agent, whose own registration (if the agent registers its id) gates the answer too, or a subagent's
 * tool, which the subagent's own answer gates. Its tool validates the answer: a call below is found by its id,
 * in the top-level tool's tree, or in the registry for a subagent's.
 */
export function waitingCallOf(
  pai: Pai,
  action: PendingActionRecord,
  registration: NormalizedRegistration | undefined,
): WaitingCall {
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
