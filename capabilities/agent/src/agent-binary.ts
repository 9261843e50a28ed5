import { access, constants } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { ExecaError, execa } from "execa";

const agentDirectory = fileURLToPath(new URL("../native/", import.meta.url));

/**
 * Where `capabilities/agent/native/build.sh` puts the static agent binary (for this machine's architecture).
 * `prepareAgentVolume` puts it on a named volume every container mounts read-only at `/opt/pai`.
 */
export const agentBinaryPath = `${agentDirectory}build/pai-agent`;

/**
 * The host side of the egress fast channel (`pai-egress-relay.c`), built next to the agent by the same script;
 * `createEgressRelay` runs it.
 */
export const egressRelayBinaryPath = `${agentDirectory}build/pai-egress-relay`;

/** The script that builds {@link agentBinaryPath} and {@link egressRelayBinaryPath}. */
export const agentBuildScriptPath = `${agentDirectory}build.sh`;

/**
 * Builds the agent and the egress relay when their sources changed (a no-op taking a few milliseconds otherwise;
 * the first build may install `musl-tools` with apt-get) and resolves to the agent binary's path.
 */
export async function buildAgentBinary(options: { signal?: AbortSignal | undefined } = {}): Promise<string> {
  try {
    await execa("bash", [agentBuildScriptPath], {
      cancelSignal: options.signal,
      maxBuffer: 16 * 1024 * 1024,
    });
  } catch (error) {
    const why =
      error instanceof ExecaError ? `${error.shortMessage}\n${String(error.stderr)}` : String(error);
    throw new Error(`building the container agent failed: ${why}`, { cause: error });
  }
  await access(agentBinaryPath, constants.X_OK);
  return agentBinaryPath;
}
