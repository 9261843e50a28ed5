import type Docker from "dockerode";
import type { ContainerSpec, ResolvedContainerSpec } from "./container-spec.ts";

/**
 * The OCI runtime of containers whose spec names none: `preferredRuntime` when the engine has it (asked once,
 * `GET /info`, and again after a failed answer), otherwise `undefined` (the engine's default). `null` always leaves
 * the choice to the engine.
 */
export function createRuntimePreference(
  docker: Docker,
  preferredRuntime: string | null,
): (spec: ContainerSpec | ResolvedContainerSpec) => Promise<string | undefined> {
  let defaultRuntime: Promise<string | undefined> | undefined;
  return function runtimeFor(spec) {
    if (spec.runtime || preferredRuntime === null) return Promise.resolve(undefined);
    defaultRuntime ??= docker
      .info()
      .then((info: { Runtimes?: Record<string, unknown> }) =>
        info.Runtimes && preferredRuntime in info.Runtimes ? preferredRuntime : undefined,
      );
    defaultRuntime.catch(() => {
      defaultRuntime = undefined;
    });
    return defaultRuntime;
  };
}
