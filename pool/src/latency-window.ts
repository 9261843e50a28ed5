/** Percentiles over the most recent samples. Internal. */
export interface LatencyWindow {
  add(ms: number): void;
  /** `{ p50, p95, count }` in milliseconds; zeros when there is no sample yet. */
  summary(): { p50: number; p95: number; count: number };
}

/** Keeps the last `size` samples in a ring. */
export function createLatencyWindow(size = 512): LatencyWindow {
  const samples: number[] = [];
  let next = 0;
  const percentile = (sorted: number[], p: number) =>
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? 0;
  return {
    add(ms) {
      if (samples.length < size) samples.push(ms);
      else samples[next] = ms;
      next = (next + 1) % size;
    },
    summary() {
      if (samples.length === 0) return { p50: 0, p95: 0, count: 0 };
      const sorted = [...samples].sort((a, b) => a - b);
      const round = (n: number) => Math.round(n * 100) / 100;
      return {
        p50: round(percentile(sorted, 50)),
        p95: round(percentile(sorted, 95)),
        count: samples.length,
      };
    },
  };
}
