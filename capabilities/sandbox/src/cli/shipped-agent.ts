import { ContainerAgentError, findPrebuiltBinary, nodeArchitecture } from "@pai/container-agent";

/**
 * The in-container agent binary `@pai/container-agent` ships for an engine of `architecture` (as the engine says
 * it: `x86_64`, `aarch64`), or why there is none (which architectures it ships, or which file is missing and how
 * to get it).
 */
export async function shippedAgent(architecture: string): Promise<{ path: string } | { missing: string }> {
  try {
    return {
      path: await findPrebuiltBinary({ program: "pai-agent", architecture: nodeArchitecture(architecture) }),
    };
  } catch (error) {
    if (ContainerAgentError.hasCode(error, "PREBUILT_BINARY_MISSING")) return { missing: error.message };
    throw error;
  }
}
