import { describe, expect, it } from "vitest";
import { freeCapacity, pickEngine } from "./engine-capacity.ts";

const limits = { memoryBytes: 1024 ** 3, nanoCpus: 1e9 };
const host = { memoryBytes: 8 * 1024 ** 3, cpus: 4, containersRunning: 2, architecture: "x86_64" };

describe("freeCapacity", () => {
  it("is the smallest of free slots, free memory and free CPUs", () => {
    const capacity = freeCapacity(
      { max: 10, leased: 1, heldNow: 0, report: { info: host, heldThen: 0 } },
      limits,
    );
    expect(capacity).toEqual({ score: 0.5, slots: 0.9, memory: 0.75, cpu: 0.5 });
  });

  it("counts this pool's containers made or removed since the engine's last report", () => {
    // Two more containers of the pool since the report: 4 running at 1 CPU each fill the 4 CPUs.
    const capacity = freeCapacity(
      { max: 10, leased: 0, heldNow: 3, report: { info: host, heldThen: 1 } },
      limits,
    );
    expect(capacity.cpu).toBe(0);
    expect(capacity.score).toBe(0);
  });

  it("weighs slots alone before the first report and for containers without limits", () => {
    expect(freeCapacity({ max: 4, leased: 1, heldNow: 1, report: undefined }, limits).score).toBe(0.75);
    const unlimited = { memoryBytes: null, nanoCpus: null };
    expect(
      freeCapacity({ max: 4, leased: 3, heldNow: 9, report: { info: host, heldThen: 0 } }, unlimited),
    ).toEqual({
      score: 0.25,
      slots: 0.25,
      memory: 1,
      cpu: 1,
    });
  });
});

describe("pickEngine", () => {
  const capacity = (score: number, slots = score) => ({ score, slots, memory: 1, cpu: 1 });

  it("takes the highest score, then the most free slots, then a ready container, then the first", () => {
    expect(
      pickEngine([
        { engine: "a", capacity: capacity(0.2), available: 1 },
        { engine: "b", capacity: capacity(0.6), available: 0 },
      ]),
    ).toBe("b");
    expect(
      pickEngine([
        { engine: "a", capacity: capacity(0, 0.5), available: 1 },
        { engine: "b", capacity: capacity(0, 0.9), available: 0 },
      ]),
    ).toBe("b");
    expect(
      pickEngine([
        { engine: "a", capacity: capacity(0.5), available: 0 },
        { engine: "b", capacity: capacity(0.5), available: 2 },
      ]),
    ).toBe("b");
    expect(
      pickEngine([
        { engine: "a", capacity: capacity(0.5), available: 1 },
        { engine: "b", capacity: capacity(0.5), available: 1 },
      ]),
    ).toBe("a");
    expect(pickEngine([])).toBeUndefined();
  });
});
