import type { Pai } from "../agents/create-pai.ts";
import type { CapabilityBinding } from "../capabilities/capability-binding.ts";
import type { Capability, CapabilityMap } from "../capabilities/define-capability.ts";
import { PaiError } from "../errors/pai-error.ts";
import type { AnyToolDefinition } from "../tools/define-tool.ts";

/** A runtime's capability bindings by capability name, and the declarations of the capabilities its tools use. */
export interface CapabilityBindings {
  bindings: Map<string, CapabilityBinding>;
  declarations: Map<string, Capability>;
}

/**
 * Checks `createAgentRuntime({ capabilities })` against the registry: each binding is keyed by its capability's
 * name (`INVALID_ARGUMENT` otherwise), and every capability a registered tool (or a tool nested in it), or a tool
 * source, uses has a binding (`MISSING_CAPABILITY`, naming both, otherwise).
 */
export function capabilityBindingsOf(
  pai: Pai,
  map: Record<string, CapabilityBinding> | undefined,
): CapabilityBindings {
  const bindings = new Map<string, CapabilityBinding>();
  for (const [key, binding] of Object.entries(map ?? {})) {
    if (binding.capability !== key) {
      throw new PaiError(
        "INVALID_ARGUMENT",
        `capabilities.${key} is a binding for "${binding.capability}"; key it by its capability name`,
      );
    }
    bindings.set(key, binding);
  }
  const declarations = new Map<string, Capability>();
  for (const agentId of Object.keys(pai.agents)) {
    const agent = pai.agent(agentId);
    const users = [
      ...[...agent.registrations.values()].map((r) => ({
        name: r.name,
        capabilities: capabilitiesOfTree(r.tool),
      })),
      ...[...agent.sources].map(([name, source]) => ({
        name,
        capabilities: Object.values(source.capabilities as CapabilityMap),
      })),
    ];
    for (const registration of users) {
      for (const capability of registration.capabilities) {
        declarations.set(capability.name, capability);
        if (!bindings.has(capability.name)) {
          throw new PaiError(
            "MISSING_CAPABILITY",
            `tool "${registration.name}" of agent "${agentId}" needs capability "${capability.name}", but createAgentRuntime({ capabilities }) has no binding for it`,
            { details: { agentId, toolName: registration.name, capability: capability.name } },
          );
        }
      }
    }
  }
  return { bindings, declarations };
}

/** The capabilities a tool and its nested tools use. */
function capabilitiesOfTree(tool: AnyToolDefinition): Capability[] {
  return [
    ...Object.values(tool.capabilities as CapabilityMap),
    ...Object.values(tool.tools).flatMap((child) => capabilitiesOfTree(child)),
  ];
}
