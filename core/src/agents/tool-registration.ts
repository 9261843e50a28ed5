import { PaiError } from "../errors/pai-error.ts";
import { type AnyToolDefinition, isToolDefinition } from "../tools/define-tool.ts";
import type { ToolRegistrationConfig } from "./define-agent.ts";
import { isToolSource, type ToolSource } from "./tool-source.ts";

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

/** An agent's `tools` map split into its tool entries and its sources, by key. */
export function splitToolSources(tools: Record<string, unknown>): {
  entries: Record<string, unknown>;
  sources: Map<string, ToolSource>;
} {
  const entries: Record<string, unknown> = {};
  const sources = new Map<string, ToolSource>();
  for (const [key, entry] of Object.entries(tools)) {
    if (isToolSource(entry)) sources.set(key, entry);
    else entries[key] = entry;
  }
  return { entries, sources };
}

/**
 * What each of an agent's sources offers now, normalized, by source key. A source that fails keeps what it offered
 * before (`previous`; nothing at first) and its error goes to `onError`; a name that another tool of the agent has
 * already is `INVALID_ARGUMENT`.
 */
export async function resolveToolSources(options: {
  agentId: string;
  sources: ReadonlyMap<string, ToolSource>;
  /** The agent's own registrations, whose names the sources' may not take. */
  registrations: ReadonlyMap<string, NormalizedRegistration>;
  previous?: ReadonlyMap<string, NormalizedRegistration[]>;
  threadId: string;
  signal: AbortSignal;
  /** Each source's capability facades (see {@link ToolSourceArgs.capabilities}), when within a run. */
  capabilitiesFor?: (source: ToolSource) => Record<string, unknown>;
  onError(error: unknown, key: string): void | Promise<void>;
}): Promise<Map<string, NormalizedRegistration[]>> {
  const { agentId, threadId, signal } = options;
  const keys = [...options.sources.keys()];
  const offered = await Promise.all(
    keys.map(async (key) => {
      try {
        const source = options.sources.get(key)!;
        const capabilities = options.capabilitiesFor?.(source);
        const tools = await source.tools({
          key,
          threadId,
          signal,
          ...(capabilities ? { capabilities } : {}),
        });
        return normalizeRegistrations(agentId, tools);
      } catch (error) {
        await options.onError(error, key);
        return options.previous?.get(key) ?? [];
      }
    }),
  );
  const owners = new Map<string, string>();
  for (const [index, key] of keys.entries()) {
    for (const { name } of offered[index]!) {
      const owner = owners.get(name);
      const other = options.registrations.has(name)
        ? "the agent's own tool"
        : owner !== undefined
          ? `tool source "${owner}"`
          : undefined;
      if (other !== undefined) {
        throw new PaiError(
          "INVALID_ARGUMENT",
          `agent "${agentId}": tool source "${key}" offers "${name}", a name ${other} has already`,
          { details: { agentId, source: key, toolName: name } },
        );
      }
      owners.set(name, key);
    }
  }
  return new Map(keys.map((key, index) => [key, offered[index]!]));
}
