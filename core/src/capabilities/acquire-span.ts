import { type Context, type Span, SpanStatusCode } from "@opentelemetry/api";
import { paiMetrics } from "../telemetry/pai-metrics.ts";
import { failSpan, startPaiSpan } from "../telemetry/pai-telemetry.ts";
import type { CapabilityLifetime } from "../threads/thread-store.ts";
import type { ProvisionedResource } from "./capability-binding.ts";

/** What a lease's resource came from, as `pai.capability.acquire` tells it. */
export type AcquireSource = "warm" | "cold" | "woken" | "reattached";

/** A lease's resource obtained, and whether it was a recorded one (reattached, taken or handed over). */
export interface Obtained {
  resource: ProvisionedResource;
  reattached: boolean;
}

/**
 * Traces a lease's resource being obtained as `pai.capability.acquire` below the active context (the tool call that
 * first used it): its capability and lifetime, where it came from (`warm` | `cold` from the binding's
 * `acquisition`, or `reattached`; a recorded resource replaced by a new one is the new one's `warm` | `cold`, with
 * `pai.capability.replaced`), the engine, and the binding's wait and create times; the duration goes to
 * `pai.capability.acquire.duration`. A failure is recorded with its code.
 */
export async function traceAcquire(
  target: { capability: string; lifetime: CapabilityLifetime },
  obtain: () => Promise<Obtained>,
): Promise<ProvisionedResource> {
  const startedAt = performance.now();
  const span = startPaiSpan("pai.capability.acquire", {
    attributes: { "pai.capability.name": target.capability, "pai.capability.lifetime": target.lifetime },
  });
  try {
    const obtained = await obtain();
    recordAcquired(span, target.capability, obtained, performance.now() - startedAt);
    return obtained.resource;
  } catch (error) {
    failSpan(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/**
 * Records a dead owner's lease this process took over (no run asked for it: maintenance, or a binding's first
 * reconcile) as `pai.capability.acquire` of a trace of its own, made after the fact from `startedAt` (epoch
 * milliseconds) with `pai.capability.taken_over`; `parent` carries the runtime's telemetry flags.
 */
export function traceTakeover(
  target: { capability: string; lifetime: CapabilityLifetime },
  resource: ProvisionedResource,
  startedAt: number,
  parent: Context,
): void {
  const span = startPaiSpan("pai.capability.acquire", {
    parent,
    startTime: startedAt,
    attributes: {
      "pai.capability.name": target.capability,
      "pai.capability.lifetime": target.lifetime,
      "pai.capability.taken_over": true,
    },
  });
  recordAcquired(span, target.capability, { resource, reattached: true }, Date.now() - startedAt);
  span.end();
}

/** Records an obtained resource on `pai.capability.acquire.duration` and, when it records, on `span` (status OK). */
function recordAcquired(span: Span, capability: string, obtained: Obtained, durationMs: number): void {
  const { resource, reattached } = obtained;
  const acquisition = resource.acquisition;
  // A recorded resource that had to be replaced (another spec took over its files) is a new one: the binding says
  // where that came from, as for any resource it hands out.
  const replaced = reattached && acquisition !== undefined;
  const source: AcquireSource = reattached && !replaced ? "reattached" : (acquisition?.source ?? "cold");
  paiMetrics().acquireDuration.record(durationMs, {
    "pai.capability.name": capability,
    "pai.capability.source": source,
  });
  if (!span.isRecording()) return;
  span.setAttributes({
    "pai.capability.source": source,
    "pai.capability.resource_id": resource.resourceId,
    ...(replaced ? { "pai.capability.replaced": true } : {}),
    ...(acquisition?.engine !== undefined ? { "pai.capability.engine": acquisition.engine } : {}),
    ...(acquisition?.waitMs !== undefined ? { "pai.capability.wait_ms": acquisition.waitMs } : {}),
    ...(acquisition?.createMs !== undefined ? { "pai.capability.create_ms": acquisition.createMs } : {}),
  });
  span.setStatus({ code: SpanStatusCode.OK });
}

/**
 * Records a hibernated resource woken for a call as `pai.capability.acquire` with source `woken` (a span made after
 * the fact, from `startedAt`, so a call that found its resource running leaves none) and on
 * `pai.capability.wake.duration`.
 */
export function traceWake(
  target: { capability: string; lifetime: CapabilityLifetime; resourceId: string },
  startedAt: number,
): void {
  const durationMs = Date.now() - startedAt;
  paiMetrics().wakeDuration.record(durationMs, { "pai.capability.name": target.capability });
  const span = startPaiSpan("pai.capability.acquire", {
    startTime: startedAt,
    attributes: {
      "pai.capability.name": target.capability,
      "pai.capability.lifetime": target.lifetime,
      "pai.capability.source": "woken",
      "pai.capability.resource_id": target.resourceId,
      "pai.capability.wait_ms": durationMs,
    },
  });
  span.setStatus({ code: SpanStatusCode.OK });
  span.end();
}
