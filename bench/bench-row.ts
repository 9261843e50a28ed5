import type { Summary } from "./stats.ts";

/** One line of the benchmark table (and of the JSON written under bench/results/). */
export interface BenchRow {
  name: string;
  /** The measured figure for PAI's path (milliseconds unless `unit` says otherwise). */
  subject?: Summary;
  /** The side-by-side baseline. */
  baseline?: Summary;
  /** subject p50 / baseline p50 (or what the row says it is), when both exist. */
  ratio?: number;
  /** A single figure (throughput, memory, ...) and its unit. */
  value?: number;
  unit?: string;
  target?: string;
  met?: boolean;
  note?: string;
}

export function ratioRow(row: {
  name: string;
  subject: Summary;
  baseline: Summary;
  target?: string;
  maxRatio?: number;
  /** The ratio to judge, when it is not subject p50 / baseline p50 (a median of paired rounds' ratios). */
  ratio?: number;
  note?: string;
}): BenchRow {
  const ratio = row.ratio ?? row.subject.p50 / row.baseline.p50;
  const maxRatio = row.maxRatio ?? parseTarget(row.target);
  return {
    name: row.name,
    subject: row.subject,
    baseline: row.baseline,
    ratio,
    ...(row.target ? { target: row.target } : {}),
    ...(maxRatio !== undefined ? { met: ratio <= maxRatio } : {}),
    ...(row.note ? { note: row.note } : {}),
  };
}

function parseTarget(target: string | undefined): number | undefined {
  const match = target?.match(/≤\s*([\d.]+)/);
  return match ? Number(match[1]) : undefined;
}
