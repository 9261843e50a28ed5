import type { PortPreview, PreviewExposer } from "@pai/core";
import { SandboxError } from "./sandbox-error.ts";
import type { SandboxExposePortOptions } from "./sandbox-facade.ts";
import { checkSandboxPort } from "./sandbox-port.ts";

/**
 * `SandboxFacade.exposePort` with the run's `previews` (see `sandboxCalls`): checks the port, then opens the preview.
 * Without `previews` (no runtime serves them here) it fails with `PREVIEWS_UNAVAILABLE`.
 */
export async function exposeSandboxPort(
  previews: PreviewExposer | undefined,
  port: number,
  options: SandboxExposePortOptions = {},
): Promise<PortPreview> {
  checkSandboxPort(port);
  const { signal, ...exposeOptions } = options;
  signal?.throwIfAborted();
  if (!previews) {
    throw new SandboxError(
      "PREVIEWS_UNAVAILABLE",
      "sandbox.exposePort needs a runtime that serves previews: call it from a tool the runtime runs, and mount the HTTP handler createPaiHandler makes (it serves the previews)",
      { details: { port } },
    );
  }
  return previews.expose(port, exposeOptions);
}
