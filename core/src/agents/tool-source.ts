import type { CapabilityMap } from "../capabilities/define-capability.ts";
import { PaiError } from "../errors/pai-error.ts";
import { type NormalizedRegistration, normalizeRegistrations } from "./tool-registration.ts";

/** What a tool source's `tools` receives each time the runtime asks it. */
export interface ToolSourceArgs {
  /** The key the agent registered the source under (`tools: { github: source }` → `"github"`). */
  key: string;
  threadId: string;
  /** The run's signal (Stop), or the answering request's. */
  signal: AbortSignal;
  /**
   * The facades of the source's `capabilities`, by key, as a tool's `ctx.capabilities` (the run's leases); absent
   * when an answer to one of its calls is checked outside a run: the source then offers what it knows without them.
   */
  capabilities?: Record<string, unknown>;
}

/**
 * Tools an agent gets from somewhere that can change while a run goes on (an MCP server's list), resolved when a
 * run starts, again before every model step, and when an answer to one of its calls arrives. A tool it offers at a
 * step is the model's to call from that step on; one it stops offering leaves the model's list (its past calls
 * keep rendering and resuming while the source still knows it).
 */
export interface ToolSource {
  readonly kind: "pai.tool-source";
  /** Every capability its tools may use: a runtime without a binding for one refuses to start. */
  readonly capabilities: CapabilityMap;
  /**
   * The tools it offers now: the name the model sees → a tool or a `{ tool, enabled, mapContext, onOutput }`
   * registration. Names must not collide with the agent's other tools'.
   */
  tools(args: ToolSourceArgs): Promise<Record<string, unknown>>;
}

/**
 * Declares a tool source for `defineAgent({ tools: { key: source } })`. Pure: `tools` is called by the runtime.
 * @example
 * const plugins = defineToolSource({ tools: async ({ signal }) => loadPluginTools(signal) });
 * defineAgent({ tools: { search, plugins } });
 */
export function defineToolSource(options: {
  capabilities?: CapabilityMap;
  tools: ToolSource["tools"];
}): ToolSource {
  return { kind: "pai.tool-source", capabilities: options.capabilities ?? {}, tools: options.tools };
}

/** True for a value `defineToolSource` returned. */
export function isToolSource(value: unknown): value is ToolSource {
  return (
    typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === "pai.tool-source"
  );
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
