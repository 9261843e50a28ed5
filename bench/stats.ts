/** Percentiles and timing helpers for side-by-side benchmarks. */
export interface Summary {
  n: number;
  p50: number;
  p95: number;
  p99: number;
  mean: number;
}

export function summarize(samples: number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  const mean = sorted.reduce((sum, value) => sum + value, 0) / Math.max(1, sorted.length);
  return { n: sorted.length, p50: at(0.5), p95: at(0.95), p99: at(0.99), mean };
}

/** The middle value of `values` (the mean of the two middle ones for an even count). */
export function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Milliseconds taken by `fn`. */
export async function time(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/**
 * Runs `a` and `b` alternately `rounds` times (after `warmup` rounds each), so both see the same machine state.
 * `rounds` are each round's two times (its runs of `a` and `b` next to each other, the first of them in turn).
 */
export async function sideBySide(
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
  options: { rounds: number; warmup: number },
): Promise<{ a: Summary; b: Summary; rounds: Array<{ a: number; b: number }> }> {
  for (let i = 0; i < options.warmup; i++) {
    await a();
    await b();
  }
  const as: number[] = [];
  const bs: number[] = [];
  for (let i = 0; i < options.rounds; i++) {
    if (i % 2 === 0) {
      as.push(await time(a));
      bs.push(await time(b));
    } else {
      bs.push(await time(b));
      as.push(await time(a));
    }
  }
  return {
    a: summarize(as),
    b: summarize(bs),
    rounds: as.map((value, round) => ({ a: value, b: bs[round]! })),
  };
}

export function fmt(ms: number): string {
  if (!Number.isFinite(ms)) return "-";
  if (ms < 1) return `${(ms * 1000).toFixed(0)} µs`;
  if (ms < 100) return `${ms.toFixed(2)} ms`;
  return `${ms.toFixed(0)} ms`;
}
