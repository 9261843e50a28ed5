import { execFile } from "node:child_process";
import { access, constants } from "node:fs/promises";
import { fileURLToPath } from "node:url";

const agentDirectory = fileURLToPath(new URL("../native/", import.meta.url));

/**
 * Where `capabilities/agent/native/build.sh` puts the static agent binary (for this machine's architecture).
 * `prepareAgentVolume` puts it on a named volume every container mounts read-only at `/opt/pai`.
 */
export const agentBinaryPath = `${agentDirectory}build/pai-agent`;

/** The script that builds {@link agentBinaryPath}. */
export const agentBuildScriptPath = `${agentDirectory}build.sh`;

/**
 * Builds the agent when its source changed (a no-op taking a few milliseconds otherwise; the first build may
 * install `musl-tools` with apt-get) and resolves to the binary's path.
 */
export async function buildAgentBinary(options: { signal?: AbortSignal | undefined } = {}): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    execFile(
      "bash",
      [agentBuildScriptPath],
      { signal: options.signal, maxBuffer: 16 * 1024 * 1024 },
      (error, _stdout, stderr) => {
        if (error)
          reject(
            new Error(`building the container agent failed: ${error.message}\n${stderr}`, { cause: error }),
          );
        else resolve();
      },
    );
  });
  await access(agentBinaryPath, constants.X_OK);
  return agentBinaryPath;
}
