import { z } from "zod";
import type { NormalizedRegistration } from "../agents/tool-registration.ts";
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

export interface AgentManifest {
  id: string;
  name: string;
  tools: ToolManifest[];
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
