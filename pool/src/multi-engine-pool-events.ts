import type { ContainerPool } from "./container-pool.ts";
import type { EngineStatus } from "./engine-record.ts";
import type { PoolError } from "./pool-error.ts";
import type { ContainerPoolEventMap, PoolEventEmitter } from "./pool-events.ts";

type WithEngine<EVENT> = EVENT & { engineId: string };

/** The events of a `MultiEnginePool`: its engines' pool events with the engine's id, and two of its own. */
export type MultiEnginePoolEventMap = {
  [NAME in Exclude<keyof ContainerPoolEventMap, "error">]: WithEngine<ContainerPoolEventMap[NAME]>;
} & {
  /** A failure handled inside: an engine pool's, a failed `prepareEngine` or `docker info`. */
  error: WithEngine<{
    operation: ContainerPoolEventMap["error"]["operation"] | "prepare" | "info";
    error: unknown;
    containerId?: string;
  }>;
  /** An engine became reachable or unreachable. */
  engine: { engineId: string; status: Exclude<EngineStatus, "starting">; error?: unknown };
  /** A lease was lost: its engine stopped answering. */
  lost: { engineId: string; containerId: string; leaseKey: string; error: PoolError };
};

/** Passes every event of one engine's pool on to the multi-engine pool's `events`, with the engine's id. */
export function forwardEngineEvents<STATE>(
  engineId: string,
  pool: ContainerPool<STATE>,
  events: PoolEventEmitter<MultiEnginePoolEventMap>,
): void {
  pool.events.on("create", (event) => events.emit("create", { ...event, engineId }));
  pool.events.on("destroy", (event) => events.emit("destroy", { ...event, engineId }));
  pool.events.on("acquire", (event) => events.emit("acquire", { ...event, engineId }));
  pool.events.on("exit", (event) => events.emit("exit", { ...event, engineId }));
  pool.events.on("hibernate", (event) => events.emit("hibernate", { ...event, engineId }));
  pool.events.on("wake", (event) => events.emit("wake", { ...event, engineId }));
  pool.events.on("restart", (event) => events.emit("restart", { ...event, engineId }));
  pool.events.on("error", (event) => events.emit("error", { ...event, engineId }));
}
