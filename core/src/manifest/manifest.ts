import { z } from "zod";
import type { NormalizedRegistration } from "../agents/tool-registration.ts";
import type { ToolSource } from "../agents/tool-source.ts";
import type { CapabilityMap } from "../capabilities/define-capability.ts";
import { toolInputJsonSchema } from "../tools/tool-input-schema.ts";

/** One tool as the manifest describes it. */
export interface ToolManifest {
  /** The registration key: the name the model sees. */
  key: string;
  /** The wire identity. */
  id: string;
  description: string;
  inputSchema: unknown;
  outputSchema: unknown;
  /** Whether the registration has an `enabled` gate (the tool may be hidden at run time). */
  hasEnabledGate: boolean;
  /** True for a client-executed tool (no server `execute`). */
  clientExecuted: boolean;
  capabilities: string[];
  dataChannels: string[];
  /** Nested child tools: key → wire id. */
  nestedTools: Record<string, string>;
}

/**
 * One tool source of an agent (`defineToolSource`, an MCP server's `mcpTools`) as the manifest describes it: its
 * tools are only known at run time, so they are not in the agent's `tools`.
 */
export interface ToolSourceManifest {
  /** The key the agent registers it under (an MCP set's tools are named `<key>_<tool>` by default). */
  key: string;
  /** Its name (an MCP server's), or its key when it has none. */
  name: string;
  /** What its tools are for, or `null` when it does not say. */
  description: string | null;
  /** The capabilities its tools may use. */
  capabilities: string[];
}

export interface AgentManifest {
  id: string;
  name: string;
  tools: ToolManifest[];
  /** Its tool sources, whose tools the runtime asks for when a run starts and before every step. */
  toolSources: ToolSourceManifest[];
}

/** The JSON contract of a PAI registry. */
export interface PaiManifest {
  version: 1;
  agents: AgentManifest[];
}

function jsonSchemaOf(schema: z.ZodType | undefined): unknown {
  if (schema === undefined) return null;
  try {
    return z.toJSONSchema(schema, { unrepresentable: "any", io: "output" });
  } catch {
    return {};
  }
}

/** Describes the tool source registered as `key`. */
export function toolSourceManifest(key: string, source: ToolSource): ToolSourceManifest {
  return {
    key,
    name: source.name ?? key,
    description: source.description ?? null,
    capabilities: Object.values(source.capabilities).map((capability) => capability.name),
  };
}

/** Describes one registration. */
export function toolManifest(registration: NormalizedRegistration): ToolManifest {
  const { tool } = registration;
  return {
    key: registration.name,
    id: tool.id,
    description: tool.description,
    inputSchema: toolInputJsonSchema(tool.inputSchema),
    outputSchema: jsonSchemaOf(tool.outputSchema),
    hasEnabledGate: registration.enabled !== undefined,
    clientExecuted: tool.execute === undefined,
    capabilities: Object.values(tool.capabilities as CapabilityMap).map((capability) => capability.name),
    dataChannels: Object.keys(tool.dataSchemas ?? {}),
    nestedTools: Object.fromEntries(Object.entries(tool.tools).map(([key, child]) => [key, child.id])),
  };
}
