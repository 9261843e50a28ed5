import { mkdirSync, writeFileSync } from "node:fs";
import { arch, cpus, totalmem } from "node:os";
import { join } from "node:path";
import { removeBenchContainers } from "./bench-containers.ts";
import type { BenchRow } from "./bench-row.ts";
import { benchCheckpoints } from "./checkpoints.ts";
import { benchCodeInterpreter } from "./code-interpreter.ts";
import { benchColdStart } from "./cold-start.ts";
import { benchCommandRoundTrip } from "./command-round-trip.ts";
import { benchCommandsPerSecond } from "./commands-per-second.ts";
import { benchConversationBursts } from "./conversation-burst.ts";
import { benchCrossProcessStop } from "./cross-process-stop.ts";
import { benchDirectoryUpload } from "./directory-upload.ts";
import { benchEgressProxy } from "./egress-proxy.ts";
import { benchFileTransfer } from "./file-transfer.ts";
import { benchFirstUse } from "./first-use.ts";
import { benchHibernatedMemory, benchWake } from "./hibernation.ts";
import { benchIdleSandboxMemory } from "./idle-sandbox-memory.ts";
import { benchPostgresStore } from "./postgres-store.ts";
import { benchPreviews } from "./previews.ts";
import { benchRuntimeOverhead } from "./runtime-overhead.ts";
import { benchSmallFileFrames } from "./small-file-frames.ts";
import { fmt } from "./stats.ts";
import { benchTelemetryOverhead } from "./telemetry-overhead.ts";
import { benchTimeToFirstCommand } from "./time-to-first-command.ts";
import { benchVitestFixture } from "./vitest-fixture.ts";

const quick = process.argv.includes("--quick");
/** `--only "time to first command,burst"` runs just those benchmarks. */
const onlyIndex = process.argv.indexOf("--only");
const only =
  onlyIndex >= 0
    ? new Set((process.argv[onlyIndex + 1] ?? "").split(",").map((name) => name.trim()))
    : undefined;
const rows: BenchRow[] = [];

console.log(
  `PAI benchmark — ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}, ${arch()}`,
);
const benches: Array<[string, () => Promise<BenchRow[]>]> = [
  ["runtime overhead", () => benchRuntimeOverhead({ rounds: quick ? 60 : 300 })],
  ["telemetry", () => benchTelemetryOverhead({ rounds: quick ? 100 : 300 })],
  ["postgres store", () => benchPostgresStore({ rounds: quick ? 60 : 300 })],
  ["cross-process stop", () => benchCrossProcessStop({ rounds: quick ? 10 : 30 })],
  ["time to first command", () => benchTimeToFirstCommand({ rounds: quick ? 20 : 60 })],
  ["cold start", () => benchColdStart({ rounds: quick ? 6 : 20 })],
  ["round trip", () => benchCommandRoundTrip({ rounds: quick ? 20 : 60 })],
  ["commands/s", () => benchCommandsPerSecond({ seconds: quick ? 2 : 5 })],
  [
    "burst",
    () =>
      benchConversationBursts({
        repeats: quick ? 1 : 3,
        conversations: 100,
        min: 10,
        maxConcurrentCreates: 4,
      }),
  ],
  ["file transfer", () => benchFileTransfer({ rounds: quick ? 1 : 3, megabytes: 100 })],
  ["directory upload", () => benchDirectoryUpload({ rounds: quick ? 3 : 9 })],
  ["idle memory", () => benchIdleSandboxMemory({ count: quick ? 4 : 8 })],
  ["wake", () => benchWake({ rounds: quick ? 10 : 30 })],
  ["hibernated memory", () => benchHibernatedMemory({ count: quick ? 8 : 16 })],
  ["checkpoints", () => benchCheckpoints({ rounds: quick ? 8 : 30 })],
  ["file frames", () => benchSmallFileFrames({ rounds: quick ? 40 : 200 })],
  ["egress", () => benchEgressProxy({ rounds: quick ? 2 : 5, megabytes: 256 })],
  ["previews", () => benchPreviews({ rounds: quick ? 2 : 5, megabytes: 100 })],
  [
    "code interpreter",
    () =>
      benchCodeInterpreter({
        rounds: quick ? 30 : 100,
        conversations: quick ? 6 : 20,
        memoryCount: quick ? 2 : 4,
      }),
  ],
  ["vitest fixture", () => benchVitestFixture({ rounds: quick ? 5 : 15 })],
  // Minutes a round: each builds the sandbox image from scratch on an empty engine, four times.
  ["first use", () => benchFirstUse({ rounds: quick ? 1 : 2 })],
];
try {
  for (const [name, bench] of benches) {
    if (only && !only.has(name)) continue;
    const startedAt = performance.now();
    try {
      rows.push(...(await bench()));
    } catch (error) {
      rows.push({
        name,
        met: false,
        note: `failed: ${error instanceof Error ? error.message : String(error)}`,
      });
    }
    console.log(`  ${name}: ${((performance.now() - startedAt) / 1000).toFixed(1)} s`);
  }
} finally {
  const left = await removeBenchContainers();
  if (left > 0) console.log(`  removed ${left} containers a benchmark left behind`);
}

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
    row.value !== undefined && row.subject ? `${row.value.toFixed(2)} ${row.unit ?? ""}` : "",
    row.target ?? "",
    row.met === undefined ? "" : row.met ? "met" : "MISSED",
  ]);
  const header = ["benchmark", "PAI p50/p95/p99", "baseline p50/p95/p99", "ratio", "value", "target", ""];
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((line) => (line[i] ?? "").length)));
  const render = (cells: string[]) => cells.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join("  ");
  console.log(`\n${render(header)}\n${widths.map((w) => "-".repeat(w)).join("  ")}`);
  for (const line of lines) console.log(render(line));
  for (const row of list) if (row.note) console.log(`  note (${row.name}): ${row.note}`);
}
