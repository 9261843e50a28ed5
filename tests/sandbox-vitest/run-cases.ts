// Starts a Vitest run of case files (tests/sandbox-vitest/cases) in a child process, as a user's `vitest run`
// would be, and reads what it reported and what its case files recorded.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { poolLabels } from "@pai/pool";
import { testDriver } from "../sandbox/docker-helpers.ts";
import type { CaseRecord } from "./cases/case-log.ts";

const config = join(import.meta.dirname, "vitest.cases.config.ts");
const vitestBin = join(import.meta.dirname, "../../node_modules/vitest/vitest.mjs");

/** One test's outcome in Vitest's JSON report. */
export interface CaseResult {
  title: string;
  status: string;
  failureMessages: string[];
}

/** A started run of case files. */
export interface CaseRun {
  readonly child: ChildProcess;
  /** Resolves with the exit code (or signal) when the child has exited. */
  readonly exited: Promise<number | NodeJS.Signals>;
  /** What the case files recorded so far. */
  records(): Promise<CaseRecord[]>;
  /** The JSON report's test results (after the run ended). */
  results(): Promise<CaseResult[]>;
  /** Kills what is left of the run and removes its directory and any container its pools left. */
  dispose(): Promise<void>;
}

/** Containers (any state) whose pool belongs to the run with main process `pid`. */
export async function runContainers(pid: number): Promise<Array<{ id: string; poolId: string }>> {
  const rows = await testDriver.list({ labels: { [poolLabels.managed]: "true" } });
  return rows
    .map((row) => ({ id: row.id, poolId: row.labels[poolLabels.pool] ?? "" }))
    .filter((row) => row.poolId.split(":")[0] === "vitest" && row.poolId.split(":")[2] === String(pid));
}

/** Starts `vitest run` on `cases` (paths relative to this directory) with the given pool. */
export async function startCaseRun(options: {
  cases: string[];
  pool?: "threads" | "forks";
  stateDirectory: string;
  /** Leaves the fixture's global setup out of the run's config. @default false */
  withoutSetup?: boolean;
}): Promise<CaseRun> {
  const directory = await mkdtemp(join(tmpdir(), "pai-case-run-"));
  const log = join(directory, "records.jsonl");
  const report = join(directory, "report.json");
  const child = spawn(
    process.execPath,
    [vitestBin, "run", "--config", config, "--reporter=json", `--outputFile=${report}`],
    {
      env: {
        // The run under test is a run of its own: none of this worker's Vitest variables.
        ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("VITEST"))),
        PAI_CASES: options.cases.join(","),
        PAI_CASE_POOL: options.pool ?? "threads",
        PAI_CASE_LOG: log,
        PAI_SANDBOX_STATE_DIR: options.stateDirectory,
        PAI_CASE_SETUP: options.withoutSetup ? "none" : "",
      },
      // Its own process group, so a SIGKILL to the group takes its workers down with it.
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | NodeJS.Signals>((resolve) => {
    child.once("exit", (code, signal) => resolve(signal ?? code ?? -1));
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error("vitest did not start");
  return {
    child,
    exited,
    async records() {
      const text = await readFile(log, "utf8").catch(() => "");
      return text
        .split("\n")
        .filter((line) => line.trim() !== "")
        .map((line) => JSON.parse(line) as CaseRecord);
    },
    async results() {
      const text = await readFile(report, "utf8").catch(() => {
        throw new Error(`the run wrote no report; its output:\n${output}`);
      });
      const parsed = JSON.parse(text) as { testResults: Array<{ assertionResults: CaseResult[] }> };
      return parsed.testResults.flatMap((file) => file.assertionResults);
    },
    async dispose() {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {
          // already gone
        }
        await exited;
      }
      for (const row of await runContainers(pid)) await testDriver.remove(row.id).catch(() => undefined);
      await rm(directory, { recursive: true, force: true });
    },
  };
}
