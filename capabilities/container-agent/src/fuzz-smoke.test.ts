import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  buildFuzzTargets,
  type FuzzRun,
  fuzzTargets,
  replayRegressions,
  runFuzzTarget,
} from "../fuzz/libfuzzer.ts";

/** Each target's share of the smoke; they run side by side. `npm run fuzz` runs them for longer. */
const SMOKE_SECONDS = 20;

describe("libFuzzer targets of the relay and the agent (smoke)", () => {
  let buildDirectory: string;
  let scratch: string;

  beforeAll(async () => {
    // Cached by a hash of the sources; the first run on a machine installs clang (scripts/apt-install).
    buildDirectory = await buildFuzzTargets();
    scratch = await mkdtemp(join(tmpdir(), "pai-fuzz-smoke-"));
  }, 600_000);

  afterAll(async () => {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it("replays every regression input and fuzzes each target for 20 s without a finding", async () => {
    const [runs, replays] = await Promise.all([
      Promise.all(
        fuzzTargets.map((target) =>
          runFuzzTarget({
            target,
            buildDirectory,
            seconds: SMOKE_SECONDS,
            workCorpus: join(scratch, target, "corpus"),
            findingsDirectory: join(scratch, target, "findings"),
          }),
        ),
      ),
      Promise.all(fuzzTargets.map((target) => replayRegressions({ target, buildDirectory }))),
    ]);
    for (const replay of replays) expect(replay.failed).toEqual([]);
    expect(replays.find((_, index) => fuzzTargets[index] === "relay-header")?.inputs).toBeGreaterThan(0);
    for (const run of runs) {
      const report = (r: FuzzRun) => `${r.target}: exit ${r.exitCode}\n${r.outputTail}`;
      expect(run.findings, report(run)).toEqual([]);
      expect(run.exitCode, report(run)).toBe(0);
      // It really ran and reached the code under test beyond the harness.
      expect(run.executions, report(run)).toBeGreaterThan(100);
      expect(run.coverage, report(run)).toBeGreaterThan(50);
    }
  }, 120_000);
});
