import { bindFacade } from "@pai/docker-binding";
import { sandboxCalls } from "./sandbox-calls.ts";
import type { SandboxFacade } from "./sandbox-facade.ts";

/**
 * A view of `facade` whose every command and file operation is also aborted by `signal` (e.g. the run's, so
 * a user's Stop kills the command's process group even when the tool passed no signal of its own). A signal
 * the caller passes still works alongside it. A provisioned sandbox's `bind({ signal, report })` gives the same
 * view, which also reports the runs' connections and a lost container.
 *
 * @example
 * const forThisRun = bindSandboxFacade(facade, runSignal);
 * await forThisRun.runCommand({ command: "sleep 60" }); // Stop → terminationReason "abort"
 */
export function bindSandboxFacade(facade: SandboxFacade, signal: AbortSignal): SandboxFacade {
  return bindFacade(facade, { calls: sandboxCalls, signal });
}
