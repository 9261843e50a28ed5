// The libFuzzer targets of @pai/container-agent's C programs (build.sh, relay-header.c, agent-frames.c): built,
// run for a while, and their regression inputs replayed. Used by `npm run fuzz` (scripts/fuzz.ts) and by the smoke
// in `npm test` (src/fuzz-smoke.test.ts). Repository tooling: not part of the published package.
import { mkdir, readdir, stat } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { execa } from "execa";

/** The targets, each named after its `.c` here. */
export const fuzzTargets = ["relay-header", "agent-frames"] as const;
export type FuzzTarget = (typeof fuzzTargets)[number];

/** The longest input each target is given: the relay's head is read up to 32 KiB after its token line. */
const MAX_INPUT_BYTES: Record<FuzzTarget, number> = { "relay-header": 40_000, "agent-frames": 8192 };

const here = fileURLToPath(new URL(".", import.meta.url));

/** The seed corpus of `target` (kept in the repository). */
export const seedCorpus = (target: FuzzTarget) => `${here}corpus/${target}`;
/** The inputs of `target` that once failed, kept after the bug was fixed. */
export const regressionInputs = (target: FuzzTarget) => `${here}regressions/${target}`;

/** What one run of a target did. */
export interface FuzzRun {
  target: FuzzTarget;
  /** Inputs executed. */
  executions: number;
  executionsPerSecond: number;
  /** libFuzzer's `cov:` (edges covered) and `ft:` (features) at the end. */
  coverage: number;
  features: number;
  /** Inputs in the working corpus at the end (the seeds and what the run added). */
  corpusInputs: number;
  /** Files libFuzzer wrote for inputs that crashed, leaked, timed out or ran out of memory. */
  findings: string[];
  /** The run's exit code (0: no finding). */
  exitCode: number;
  /** The end of libFuzzer's output, for a report. */
  outputTail: string;
}

/** Builds the targets (cached; installs clang when missing) and returns the folder they are in. */
export async function buildFuzzTargets(options: { signal?: AbortSignal | undefined } = {}): Promise<string> {
  const { stdout } = await execa("bash", [`${here}build.sh`], {
    stderr: "inherit",
    ...(options.signal ? { cancelSignal: options.signal } : {}),
  });
  return stdout.trim();
}

async function filesIn(directory: string): Promise<string[]> {
  const names = await readdir(directory).catch(() => [] as string[]);
  const files: string[] = [];
  for (const name of names.sort()) {
    if (name.startsWith(".")) continue;
    if ((await stat(`${directory}/${name}`)).isFile()) files.push(`${directory}/${name}`);
  }
  return files;
}

function lastNumber(output: string, pattern: RegExp): number {
  const matches = [...output.matchAll(pattern)];
  return Number(matches.at(-1)?.[1] ?? 0);
}

/**
 * Runs `target` (built in `buildDirectory`) for `seconds`, on its seeds plus `workCorpus` (where new inputs are
 * kept; made when missing), writing the inputs of findings to `findingsDirectory`.
 */
export async function runFuzzTarget(options: {
  target: FuzzTarget;
  buildDirectory: string;
  seconds: number;
  workCorpus: string;
  findingsDirectory: string;
  signal?: AbortSignal | undefined;
}): Promise<FuzzRun> {
  const { target, workCorpus, findingsDirectory } = options;
  await mkdir(workCorpus, { recursive: true });
  await mkdir(findingsDirectory, { recursive: true });
  const args = [
    `-max_total_time=${options.seconds}`,
    `-max_len=${MAX_INPUT_BYTES[target]}`,
    `-dict=${here}${target}.dict`,
    `-artifact_prefix=${findingsDirectory}/`,
    "-timeout=20",
    "-rss_limit_mb=2048",
    "-print_final_stats=1",
    workCorpus,
    seedCorpus(target),
  ];
  const result = await execa(`${options.buildDirectory}/${target}`, args, {
    all: true,
    reject: false,
    ...(options.signal ? { cancelSignal: options.signal } : {}),
  });
  if (options.signal?.aborted) throw options.signal.reason;
  const output = result.all ?? "";
  const findings = (await filesIn(findingsDirectory)).filter((file) =>
    /\/(crash|leak|timeout|oom)-[^/]*$/.test(file),
  );
  return {
    target,
    executions: lastNumber(output, /stat::number_of_executed_units:\s+(\d+)/g),
    executionsPerSecond: lastNumber(output, /stat::average_exec_per_sec:\s+(\d+)/g),
    coverage: lastNumber(output, /\bcov: (\d+)/g),
    features: lastNumber(output, /\bft: (\d+)/g),
    corpusInputs: lastNumber(output, /\bcorp: (\d+)\//g),
    findings,
    exitCode: result.exitCode ?? -1,
    outputTail: output.split("\n").slice(-40).join("\n"),
  };
}

/** Runs `target` once on each of its regression inputs: the inputs that failed (none: nothing ran). */
export async function replayRegressions(options: {
  target: FuzzTarget;
  buildDirectory: string;
  signal?: AbortSignal | undefined;
}): Promise<{ inputs: number; failed: { input: string; output: string }[] }> {
  const inputs = await filesIn(regressionInputs(options.target));
  const failed: { input: string; output: string }[] = [];
  for (const input of inputs) {
    const result = await execa(`${options.buildDirectory}/${options.target}`, ["-timeout=60", input], {
      all: true,
      reject: false,
      ...(options.signal ? { cancelSignal: options.signal } : {}),
    });
    if (options.signal?.aborted) throw options.signal.reason;
    if (result.exitCode !== 0)
      failed.push({ input, output: (result.all ?? "").split("\n").slice(-30).join("\n") });
  }
  return { inputs: inputs.length, failed };
}
