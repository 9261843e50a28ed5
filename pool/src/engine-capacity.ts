import type { EngineInfo } from "./container-driver.ts";

/**
 * How much room an engine has for one more container, each part a fraction from 0 (none) to 1 (all of it).
 * Placement puts a new container on the engine with the highest `score`.
 */
export interface FreeCapacity {
  /** The smallest of `slots`, `memory` and `cpu`: the resource that runs out first decides. */
  score: number;
  /** `(max − leased) / max`: leases this engine may still take, as a share of its `max`. */
  slots: number;
  /**
   * `1 − running × memory limit / host memory`: the host's memory not yet promised to running containers, each
   * counted at this pool's memory limit (Docker does not report free memory). `1` without a limit or a report.
   */
  memory: number;
  /** `1 − running × CPU limit / host CPUs`, likewise. `1` without a limit or a report. */
  cpu: number;
}

/** What {@link freeCapacity} weighs for one engine. */
export interface EngineLoad {
  /** The engine's share of the pool (`max`). */
  max: number;
  /** This pool's leases on the engine, and placements under way there. */
  leased: number;
  /** The engine's last `docker info` (its host and load), and how many containers this pool held on it then. */
  report:
    | { info: Pick<EngineInfo, "memoryBytes" | "cpus" | "containersRunning">; heldThen: number }
    | undefined;
  /** Containers this pool holds on the engine now (idle, leased, being created or removed). */
  heldNow: number;
}

const clamp = (value: number) => (Number.isFinite(value) ? Math.min(1, Math.max(0, value)) : 1);

/**
 * The free capacity of one engine for containers with the given limits. Running containers are the engine's
 * last report (every owner's containers) corrected by what this pool created and removed there since, so
 * placements between two reports already count.
 */
export function freeCapacity(
  load: EngineLoad,
  limits: { memoryBytes: number | null | undefined; nanoCpus: number | null | undefined },
): FreeCapacity {
  const slots = load.max > 0 ? clamp((load.max - load.leased) / load.max) : 0;
  let memory = 1;
  let cpu = 1;
  if (load.report) {
    const { info, heldThen } = load.report;
    const running = Math.max(0, info.containersRunning + load.heldNow - heldThen);
    if (limits.memoryBytes && info.memoryBytes > 0) {
      memory = clamp(1 - (running * limits.memoryBytes) / info.memoryBytes);
    }
    if (limits.nanoCpus && info.cpus > 0) cpu = clamp(1 - (running * limits.nanoCpus) / 1e9 / info.cpus);
  }
  return { score: Math.min(slots, memory, cpu), slots, memory, cpu };
}

/** One engine placement may choose. */
export interface PlacementCandidate<ENGINE> {
  engine: ENGINE;
  capacity: FreeCapacity;
  /** Started containers ready on it now. */
  available: number;
}

const EPSILON = 1e-9;

/**
 * The candidate with the most free capacity: the highest `score`; on a tie the most free `slots`, then the one
 * with a container ready (no cold start), then the earliest in the list. `undefined` for no candidate.
 */
export function pickEngine<ENGINE>(candidates: readonly PlacementCandidate<ENGINE>[]): ENGINE | undefined {
  let best: PlacementCandidate<ENGINE> | undefined;
  for (const candidate of candidates) {
    if (!best) {
      best = candidate;
      continue;
    }
    const score = candidate.capacity.score - best.capacity.score;
    if (score > EPSILON) {
      best = candidate;
      continue;
    }
    if (score < -EPSILON) continue;
    const slots = candidate.capacity.slots - best.capacity.slots;
    if (slots > EPSILON) best = candidate;
    else if (slots >= -EPSILON && candidate.available > 0 && best.available === 0) best = candidate;
  }
  return best?.engine;
}
