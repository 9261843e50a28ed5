import type { CapabilityMap } from "../capabilities/define-capability.ts";

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
  /** What it is called (an MCP server's name), for the manifest. Optional: the manifest then names it by its key. */
  readonly name?: string;
  /** What its tools are for, for the manifest (its tools are only known at run time). Optional. */
  readonly description?: string;
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
 * const plugins = defineToolSource({
 *   description: "The workspace's plugins",
 *   tools: async ({ signal }) => loadPluginTools(signal),
 * });
 * defineAgent({ tools: { search, plugins } });
 */
export function defineToolSource(options: {
  /** What it is called, for the manifest. @default the key the agent registers it under */
  name?: string;
  /** What its tools are for, for the manifest. */
  description?: string;
  capabilities?: CapabilityMap;
  tools: ToolSource["tools"];
}): ToolSource {
  return {
    kind: "pai.tool-source",
    ...(options.name !== undefined ? { name: options.name } : {}),
    ...(options.description !== undefined ? { description: options.description } : {}),
    capabilities: options.capabilities ?? {},
    tools: options.tools,
  };
}

/** True for a value `defineToolSource` returned. */
export function isToolSource(value: unknown): value is ToolSource {
  return (
    typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === "pai.tool-source"
  );
}
