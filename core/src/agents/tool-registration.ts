import { PaiError } from "../errors/pai-error.ts";
import { type AnyToolDefinition, isToolDefinition } from "../tools/define-tool.ts";
import type { ToolRegistrationConfig } from "./define-agent.ts";

/** A registration normalized from either form (`{ myTool }` or `{ tool, enabled, mapContext, onOutput }`). */
export interface NormalizedRegistration {
  /** The registration key: the name the model sees. */
  name: string;
  tool: AnyToolDefinition;
  enabled: ToolRegistrationConfig<unknown>["enabled"];
  mapContext: ToolRegistrationConfig<unknown>["mapContext"];
  onOutput: ToolRegistrationConfig<unknown>["onOutput"];
}

/** Normalizes an agent's `tools` map; throws `INVALID_ARGUMENT` for anything that is not a tool. */
export function normalizeRegistrations(
  agentId: string,
  tools: Record<string, unknown>,
): NormalizedRegistration[] {
  return Object.entries(tools).map(([name, entry]) => {
    if (isToolDefinition(entry)) {
      return { name, tool: entry, enabled: undefined, mapContext: undefined, onOutput: undefined };
    }
    const config = entry as Partial<ToolRegistrationConfig<unknown>> | undefined;
    if (config && isToolDefinition(config.tool)) {
      return {
        name,
        tool: config.tool,
        enabled: config.enabled,
        mapContext: config.mapContext,
        onOutput: config.onOutput,
      };
    }
    throw new PaiError(
      "INVALID_ARGUMENT",
      `agent "${agentId}": tool "${name}" is neither a defineTool() declaration nor { tool, ... }`,
    );
  });
}
