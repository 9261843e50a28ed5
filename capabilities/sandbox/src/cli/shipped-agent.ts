import { ContainerAgentError, findPrebuiltBinary, nodeArchitecture } from "@pai/container-agent";

/**
 * The in-container agent binary `@pai/container-agent` ships for an engine of `architecture` (as the engine says
 * it: `x86_64`, `aarch64`), or `undefined` when it ships none.
 */
export async function shippedAgent(architecture: string): Promise<string | undefined> {
  try {
    return await findPrebuiltBinary({ program: "pai-agent", architecture: nodeArchitecture(architecture) });
  } catch (error) {
    if (ContainerAgentError.hasCode(error, "PREBUILT_BINARY_MISSING")) return undefined;
    throw error;
  }
}
