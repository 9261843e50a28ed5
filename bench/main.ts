import { mkdirSync, writeFileSync } from "node:fs";
import { arch, cpus, totalmem } from "node:os";
import { join } from "node:path";
import type { BenchRow } from "./bench-row.ts";
import { benchRuntimeOverhead } from "./runtime-overhead.ts";
import { fmt } from "./stats.ts";

const quick = process.argv.includes("--quick");
const rows: BenchRow[] = [];

console.log(
  `PAI benchmark — ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}, ${arch()}`,
);
rows.push(...(await benchRuntimeOverhead({ rounds: quick ? 60 : 300 })));

printTable(rows);
const dir = join(import.meta.dirname, "results");
mkdirSync(dir, { recursive: true });
const file = join(dir, `${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(
  file,
  `${JSON.stringify({ at: new Date().toISOString(), node: process.version, cores: cpus().length, rows }, null, 2)}\n`,
);
console.log(`\nwrote ${file}`);

function printTable(list: BenchRow[]) {
  const lines = list.map((row) => [
    row.name,
    row.subject
      ? `${fmt(row.subject.p50)} / ${fmt(row.subject.p95)} / ${fmt(row.subject.p99)}`
      : row.value !== undefined
        ? `${row.value.toFixed(2)} ${row.unit ?? ""}`
        : "-",
    row.baseline ? `${fmt(row.baseline.p50)} / ${fmt(row.baseline.p95)} / ${fmt(row.baseline.p99)}` : "-",
    row.ratio !== undefined ? row.ratio.toFixed(3) : "-",
    row.target ?? "",
    row.met === undefined ? "" : row.met ? "met" : "MISSED",
  ]);
  const header = ["benchmark", "PAI p50/p95/p99", "baseline p50/p95/p99", "ratio", "target", ""];
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((line) => (line[i] ?? "").length)));
  const render = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join("  ");
  console.log(`\n${render(header)}\n${widths.map((w) => "-".repeat(w)).join("  ")}`);
  for (const line of lines) console.log(render(line));
  for (const row of list) if (row.note) console.log(`  note (${row.name}): ${row.note}`);
}
