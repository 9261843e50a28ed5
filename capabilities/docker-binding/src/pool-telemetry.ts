import { observePool, paiMetrics } from "@pai/core";
import type { MultiEnginePool } from "@pai/pool";

/**
 * Reports a binding's pool through PAI's metrics until the returned function is called: its size, borrowed,
 * pending and hibernated containers (`pai.pool.*`, read at each collection) and each container it creates
 * (`pai.pool.creates`, by engine).
 */
export function reportPoolTelemetry(
  pool: Pick<MultiEnginePool<unknown>, "metrics" | "events">,
  names: { capability: string; poolId: string },
): () => void {
  const attributes = { "pai.capability.name": names.capability, "pai.pool.id": names.poolId };
  const unobserve = observePool(() => pool.metrics(), attributes);
  const unsubscribe = pool.events.on("create", ({ engineId }) =>
    paiMetrics().poolCreates.add(1, { ...attributes, "pai.pool.engine": engineId }),
  );
  return () => {
    unobserve();
    unsubscribe();
  };
}
