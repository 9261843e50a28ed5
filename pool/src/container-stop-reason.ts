import type { ContainerDriver } from "./container-driver.ts";

/**
 * Why a container stopped, as the engine's `inspect` tells it, for a person (and a model); `undefined` while it
 * runs.
 * @throws what `inspect` throws (`NOT_FOUND` when it was removed).
 */
export async function containerStopReason(
  driver: ContainerDriver,
  containerId: string,
  signal?: AbortSignal,
): Promise<string | undefined> {
  const inspection = await driver.inspect(containerId, signal ? { signal } : {});
  if (inspection.running) return undefined;
  if (inspection.oomKilled) return "its container ran out of memory";
  const code = inspection.exitCode;
  if (code === 137) return "its container was killed (exit code 137)";
  if (code === 143) return "its container was stopped (exit code 143)";
  return code === null ? "its container stopped" : `its container stopped (exit code ${code})`;
}
