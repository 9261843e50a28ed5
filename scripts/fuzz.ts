// `npm run fuzz`: fuzzes what a sandbox can send to the host, with the tools of the field.
//   node scripts/fuzz.ts [--time SECONDS] [--only TARGET] [--runs N]
// - libFuzzer targets of the C programs (capabilities/container-agent/fuzz: relay-header, agent-frames), built with
//   ASan and UBSan (cached; clang installed when missing), each run for --time seconds (default 600), one after the
//   other, on its seeds plus a working corpus kept in fuzz/work/<target> between runs; its regression inputs are
//   replayed first. Inputs of findings are written to fuzz/work/<target>/findings.
// - the fast-check properties of the Node parsers (every `*.fuzz.test.ts`), with --runs runs each (default 100000)
//   (target name: `properties`).
// Prints per target: executions (and per second), coverage (`cov:` edges, `ft:` features), corpus size and
// findings. Exits non-zero on any finding or failed property.
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { execa } from "execa";
import {
  buildFuzzTargets,
  type FuzzTarget,
  fuzzTargets,
  replayRegressions,
  runFuzzTarget,
} from "../capabilities/container-agent/fuzz/libfuzzer.ts";

const root = resolve(import.meta.dirname, "..");
const work = join(root, "capabilities/container-agent/fuzz/work");
const PROPERTIES = "properties";

const { values } = parseArgs({
  options: {
    time: { type: "string", default: "600" },
    only: { type: "string" },
    runs: { type: "string", default: "100000" },
  },
});
const seconds = Number(values.time);
const runs = Number(values.runs);
const known = [...fuzzTargets, PROPERTIES];
if (!(seconds >= 1) || !(runs >= 1) || (values.only !== undefined && !known.includes(values.only))) {
  console.error(`usage: node scripts/fuzz.ts [--time SECONDS] [--only ${known.join("|")}] [--runs N]`);
  process.exit(64);
}
const selected = values.only === undefined ? known : [values.only];

let failed = false;
const libFuzzerTargets = selected.filter((name): name is FuzzTarget => name !== PROPERTIES);
if (libFuzzerTargets.length > 0) {
  const buildDirectory = await buildFuzzTargets();
  for (const target of libFuzzerTargets) {
    const replay = await replayRegressions({ target, buildDirectory });
    for (const failure of replay.failed)
      console.error(`${target}: regression ${failure.input}\n${failure.output}`);
    console.log(`\n== ${target}: ${replay.inputs} regression inputs replayed, fuzzing for ${seconds} s`);
    const run = await runFuzzTarget({
      target,
      buildDirectory,
      seconds,
      workCorpus: join(work, target, "corpus"),
      findingsDirectory: join(work, target, "findings"),
    });
    if (run.exitCode !== 0 || run.findings.length > 0) console.error(run.outputTail);
    console.log(
      [
        `${target}: ${run.executions} executions (${run.executionsPerSecond}/s)`,
        `coverage cov: ${run.coverage} ft: ${run.features}`,
        `corpus ${run.corpusInputs} inputs`,
        `findings ${run.findings.length}${run.findings.length ? `: ${run.findings.join(", ")}` : ""}`,
      ].join(", "),
    );
    failed ||= run.exitCode !== 0 || run.findings.length > 0 || replay.failed.length > 0;
  }
}

if (selected.includes(PROPERTIES)) {
  console.log(`\n== ${PROPERTIES}: fast-check, ${runs} runs per property`);
  const { stdout } = await execa("git", ["ls-files", "*.fuzz.test.ts"], { cwd: root });
  const files = stdout.split("\n").filter(Boolean);
  const result = await execa(join(root, "node_modules/.bin/vitest"), ["run", "--testTimeout=0", ...files], {
    cwd: root,
    env: { PAI_FUZZ_RUNS: String(runs) },
    stdio: "inherit",
    reject: false,
  });
  console.log(
    `${PROPERTIES}: ${files.length} files, ${result.exitCode === 0 ? "no finding" : "a property failed"}`,
  );
  failed ||= result.exitCode !== 0;
}
process.exit(failed ? 1 : 0);
