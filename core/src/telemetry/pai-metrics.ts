import {
  type BatchObservableResult,
  type Counter,
  type Histogram,
  type Meter,
  type MeterProvider,
  metrics,
  type ObservableGauge,
  type UpDownCounter,
} from "@opentelemetry/api";
import { paiVersion } from "./pai-telemetry.ts";

/** PAI's instruments (names and units below), made on the meter provider registered when first used. */
export interface PaiMetrics {
  readonly meter: Meter;
  /** `pai.runs`: runs ended, by `pai.run.status` and `pai.agent.id`. */
  readonly runs: Counter;
  /** `pai.pending_actions.open`: pending actions made minus those settled (by this process). */
  readonly pendingActionsOpen: UpDownCounter;
  /** `pai.capability.acquire.duration` (ms): a lease's resource obtained, by capability and source. */
  readonly acquireDuration: Histogram;
  /** `pai.capability.wake.duration` (ms): a hibernated resource woken by a call. */
  readonly wakeDuration: Histogram;
  /** `pai.pool.creates`: containers a pool created, by capability and engine. */
  readonly poolCreates: Counter;
  /** `pai.pool.size`, `.borrowed`, `.pending`, `.hibernated`: a pool's state, read when metrics are collected. */
  readonly pool: {
    size: ObservableGauge;
    borrowed: ObservableGauge;
    pending: ObservableGauge;
    hibernated: ObservableGauge;
  };
  /** `pai.sandbox.commands`: commands run to their end, by `pai.sandbox.termination`. */
  readonly commands: Counter;
  /** `pai.egress.bytes` (By): bytes through a resource's egress proxy, by `pai.egress.direction` (up, down). */
  readonly egressBytes: Counter;
  /** `pai.egress.refusals`: connections the egress policy refused. */
  readonly egressRefusals: Counter;
}

let made: { provider: MeterProvider; metrics: PaiMetrics } | undefined;

/**
 * PAI's instruments on the global meter provider. The metrics API has no proxy: instruments made before the app
 * registers a provider stay no-ops, so they are made again (once) when the provider changed.
 */
export function paiMetrics(): PaiMetrics {
  const provider = metrics.getMeterProvider();
  if (made?.provider !== provider) made = { provider, metrics: createPaiMetrics(provider) };
  return made.metrics;
}

function createPaiMetrics(provider: MeterProvider): PaiMetrics {
  const meter = provider.getMeter("@pai/core", paiVersion);
  const ms = { unit: "ms" };
  return {
    meter,
    runs: meter.createCounter("pai.runs", { description: "Runs ended, by status" }),
    pendingActionsOpen: meter.createUpDownCounter("pai.pending_actions.open", {
      description: "Pending actions waiting for an answer (made minus settled)",
    }),
    acquireDuration: meter.createHistogram("pai.capability.acquire.duration", {
      ...ms,
      description: "Time to obtain a lease's resource (warm, cold or reattached)",
    }),
    wakeDuration: meter.createHistogram("pai.capability.wake.duration", {
      ...ms,
      description: "Time to wake a hibernated resource",
    }),
    poolCreates: meter.createCounter("pai.pool.creates", { description: "Containers a pool created" }),
    pool: {
      size: meter.createObservableGauge("pai.pool.size", { description: "Containers of the pool" }),
      borrowed: meter.createObservableGauge("pai.pool.borrowed", { description: "Containers leased" }),
      pending: meter.createObservableGauge("pai.pool.pending", { description: "Acquires waiting" }),
      hibernated: meter.createObservableGauge("pai.pool.hibernated", {
        description: "Leased containers stopped while idle",
      }),
    },
    commands: meter.createCounter("pai.sandbox.commands", { description: "Sandbox commands run" }),
    egressBytes: meter.createCounter("pai.egress.bytes", {
      unit: "By",
      description: "Bytes through a resource's egress proxy",
    }),
    egressRefusals: meter.createCounter("pai.egress.refusals", {
      description: "Connections the egress policy refused",
    }),
  };
}

/** Counts a pending action settled (answered, cancelled) by this process on `pai.pending_actions.open`. */
export function countActionSettled(): void {
  paiMetrics().pendingActionsOpen.add(-1);
}

/** What a pool reports to {@link observePool}. */
export interface ObservedPoolState {
  size: number;
  borrowed: number;
  pending: number;
  hibernated: number;
}

/**
 * Reports a pool's state on `pai.pool.*` at each collection, with `attributes` (its capability, its pool id), until
 * the returned function is called. `read` gives `undefined` while the pool is not made.
 */
export function observePool(
  read: () => ObservedPoolState | undefined,
  attributes: Record<string, string>,
): () => void {
  const { meter, pool } = paiMetrics();
  const gauges = [pool.size, pool.borrowed, pool.pending, pool.hibernated];
  const callback = (result: BatchObservableResult) => {
    const state = read();
    if (!state) return;
    result.observe(pool.size, state.size, attributes);
    result.observe(pool.borrowed, state.borrowed, attributes);
    result.observe(pool.pending, state.pending, attributes);
    result.observe(pool.hibernated, state.hibernated, attributes);
  };
  meter.addBatchObservableCallback(callback, gauges);
  return () => meter.removeBatchObservableCallback(callback, gauges);
}
