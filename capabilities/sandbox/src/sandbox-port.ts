import { SandboxError } from "./sandbox-error.ts";

/**
 * Checks a port of the sandbox's loopback (`openPort`, `exposePort`): an integer from 1 to 65535, else
 * `INVALID_ARGUMENT`.
 */
export function checkSandboxPort(port: unknown): number {
  if (typeof port !== "number" || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new SandboxError(
      "INVALID_ARGUMENT",
      `a sandbox port is an integer from 1 to 65535, got ${String(port)}`,
      {
        details: { port },
      },
    );
  }
  return port;
}
