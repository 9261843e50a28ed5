// `npm run load`: the load test with its defaults (3 runtime processes × 100 conversations × 5 commands on one
// Postgres, one process killed -9 half-way), printing what it counted and writing bench/results/load-<time>.json.
// Exits 1 when an answer was lost, a call executed twice or a container left behind.
// Options: --processes N --conversations N (per process) --commands N --concurrency N --no-kill
//          --engines unix:///var/run/docker.sock,unix:///run/pai-engine-1.sock (default: DOCKER_HOST or the default socket)
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { resolveDefaultSandboxImage } from "@pai/sandbox";
import { runLoadTest } from "./load-test.ts";

const { values } = parseArgs({
  options: {
    processes: { type: "string", default: "3" },
    conversations: { type: "string", default: "100" },
    commands: { type: "string", default: "5" },
    concurrency: { type: "string", default: "12" },
    engines: { type: "string", default: process.env.DOCKER_HOST ?? "unix:///var/run/docker.sock" },
    "no-kill": { type: "boolean", default: false },
  },
});
const postgres = process.env.PAI_POSTGRES_URL;
if (!postgres) throw new Error("PAI_POSTGRES_URL is not set: run it through `npm run load` (scripts/load)");
const count = (name: keyof typeof values) => {
  const value = Number(values[name]);
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`--${name} takes a whole number ≥ 1, not ${values[name]}`);
  return value;
};

// Ctrl-C / SIGTERM stop the run; it stops its processes and removes what they made before exiting.
const stop = new AbortController();
for (const name of ["SIGINT", "SIGTERM"] as const)
  process.once(name, () => stop.abort(new Error(`stopped by ${name}`)));

const report = await runLoadTest({
  signal: stop.signal,
  postgres,
  image: process.env.PAI_SANDBOX_IMAGE ?? (await resolveDefaultSandboxImage()),
  engines: String(values.engines).split(","),
  processes: count("processes"),
  conversationsPerProcess: count("conversations"),
  commands: count("commands"),
  concurrency: count("concurrency"),
  kill: !values["no-kill"],
  log: (line) => console.log(`  ${line}`),
});

console.log(`
load test — ${report.processes} runtime processes × ${report.conversations / report.processes} conversations × ${report.commands / report.conversations} commands, one Postgres${report.killedOwner ? `, ${report.killedOwner} killed -9 half-way` : ""}
  answers lost                 ${report.answersLost}
  tool calls executed twice    ${report.toolCallsExecutedTwice}
  containers left              ${report.containersLeft}
  throughput                   ${report.commandsPerSecond.toFixed(1)} commands/s (${report.commandsCompleted} commands in ${report.seconds.toFixed(1)} s)
  command latency              p50 ${report.commandLatencyMs.p50} ms, p95 ${report.commandLatencyMs.p95} ms, p99 ${report.commandLatencyMs.p99} ms
  conversations completed      ${report.conversationsCompleted}/${report.conversations}
  calls interrupted, re-asked  ${report.callsInterrupted}
  requests retried             ${report.retries}`);

const directory = join(import.meta.dirname, "..", "results");
mkdirSync(directory, { recursive: true });
const file = join(directory, `load-${new Date().toISOString().replaceAll(":", "-").replace(".", "-")}.json`);
writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
console.log(`\nwrote ${file}`);
const clean =
  report.answersLost === 0 &&
  report.toolCallsExecutedTwice === 0 &&
  report.containersLeft === 0 &&
  report.conversationsCompleted === report.conversations;
process.exit(clean ? 0 : 1);
