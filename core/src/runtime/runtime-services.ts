import type { Duplex } from "node:stream";
import type { PreviewEntry, PreviewRegistry } from "../previews/preview-registry.ts";

/** A facade of a thread's capability used outside any run (a terminal), until `release`. */
export interface ThreadFacadeUse {
  facade: Record<string, unknown>;
  /** The use ended: the lease may hibernate again once nothing else uses it. */
  release(): Promise<void>;
}

/** What the HTTP handler and the preview server need of a runtime beyond its public interface. */
export interface RuntimeServices {
  previews: PreviewRegistry;
  /** A new connection to a preview's port, its resource woken first; its close ends the use. */
  connectPreview(entry: PreviewEntry, signal: AbortSignal): Promise<Duplex>;
  /**
   * The facade of `capability` for a thread, outside any run: provisioned (or woken) on first use, kept from
   * hibernating until `release`. Only for capabilities that outlive runs (`thread`, `user`).
   */
  useThreadFacade(options: {
    threadId: string;
    identityKey: string;
    capability: string;
    signal: AbortSignal;
  }): ThreadFacadeUse;
}

/** By runtime (an `AgentRuntime`; typed `object` so that this module does not import the runtime's). */
const services = new WeakMap<object, RuntimeServices>();

/** Records the services of a runtime `createAgentRuntime` made. */
export function registerRuntimeServices(runtime: object, value: RuntimeServices): void {
  services.set(runtime, value);
}

/** The services of `runtime`; `undefined` for an object `createAgentRuntime` did not make. */
export function runtimeServices(runtime: object): RuntimeServices | undefined {
  return services.get(runtime);
}
