import { access, constants } from "node:fs/promises";
import { agentBinaryPath } from "@pai/container-agent";

/** The kernel's name (`uname -m`, Docker's `Architecture`) of the CPU this Node runs on. */
const hostArchitecture: string =
  ({ x64: "x86_64", arm64: "aarch64" } as Record<string, string>)[process.arch] ?? process.arch;

/**
 * The in-container agent binary `@pai/container-agent` has for an engine of `architecture` (`x86_64`, `aarch64`),
 * or `undefined`. Today the package holds one binary, built for this machine's architecture on first use.
 */
export async function shippedAgent(architecture: string): Promise<string | undefined> {
  if (architecture !== hostArchitecture) return undefined;
  try {
    await access(agentBinaryPath, constants.X_OK);
    return agentBinaryPath;
  } catch {
    return undefined;
  }
}
