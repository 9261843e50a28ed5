// End to end: the demo's main (`examples/code-agent/main.ts`, what `npm run demo` runs) as a real child process on
// the embedded scripted model (no key) and the real Docker engine. Each run gets its own directory (for
// .pai/demo.db) and its own sandbox pool id, so the engine shows exactly which containers it left behind.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createSqliteThreadStore } from "@pai/core";
import { test as base, describe, expect } from "vitest";
import { poolContainers, removePoolContainers, uniquePoolId } from "../sandbox/docker-helpers.ts";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const MODEL_VARIABLES = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "PAI_MODEL_BASE_URL", "PAI_MODEL"];

/** A running demo: its output so far, a wait for a line of it, and its exit. */
interface DemoProcess {
  child: ChildProcess;
  output(): string;
  waitForOutput(text: string): Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

interface DemoFixture {
  /** Where the demo runs (its .pai/demo.db lives here). */
  directory: string;
  /** The demo's sandbox pool: its containers carry `pai.pool=<poolId>`. */
  poolId: string;
  start(options: { stdin: "ignore" | "pipe" }): DemoProcess;
}

// biome-ignore lint/correctness/noEmptyPattern: vitest reads a fixture's dependencies from this pattern
const test = base.extend("demo", async ({}, { onCleanup }): Promise<DemoFixture> => {
  const directory = await mkdtemp(join(tmpdir(), "pai-demo-"));
  const poolId = uniquePoolId("demo");
  const children: ChildProcess[] = [];
  onCleanup(async () => {
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await removePoolContainers(poolId);
    await rm(directory, { recursive: true, force: true });
  });
  return {
    directory,
    poolId,
    start({ stdin }) {
      const env: NodeJS.ProcessEnv = { ...process.env, PAI_DEMO_POOL_ID: poolId };
      for (const name of MODEL_VARIABLES) delete env[name];
      const localNode = join(repoRoot, "node_modules", ".bin", "node");
      const child = spawn(
        existsSync(localNode) ? localNode : process.execPath,
        [join(repoRoot, "examples/code-agent/main.ts")],
        { cwd: directory, env, stdio: [stdin, "pipe", "pipe"] },
      );
      children.push(child);
      let output = "";
      const waiters = new Set<() => void>();
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        for (const waiter of waiters) waiter();
      };
      child.stdout!.on("data", onData);
      child.stderr!.on("data", onData);
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        child.once("exit", (code, signal) => resolve({ code, signal })),
      );
      return {
        child,
        output: () => output,
        exited,
        waitForOutput: (text) =>
          new Promise<void>((resolve, reject) => {
            const check = () => {
              if (!output.includes(text)) return;
              waiters.delete(check);
              resolve();
            };
            waiters.add(check);
            check();
            void exited.then(() => {
              if (!output.includes(text))
                reject(new Error(`the demo exited before printing "${text}":\n${output}`));
            });
          }),
      };
    },
  };
});

/** The thread id the demo prints at the end ("thread <id> is saved in .pai/demo.db"). */
function threadIdOf(output: string): string {
  const match = /thread (\S+) is saved in \.pai\/demo\.db/.exec(output);
  if (!match) throw new Error(`the demo did not name its thread:\n${output}`);
  return match[1]!;
}

// Generous: a demo warms a pool and runs a whole conversation on a shared, loaded engine.
describe("npm run demo (examples/code-agent/main.ts)", { timeout: 300_000 }, () => {
  test("counts the end of input at the approval prompt as no, says so, and finishes", async ({ demo }) => {
    const run = demo.start({ stdin: "ignore" });
    const { code } = await run.exited;
    const output = run.output();
    expect(code, output).toBe(0);
    expect(output).toContain("approve? [y/N]");
    expect(output).toContain("no answer: the input ended, which counts as no");
    // The code interpreter step: the cell loaded the CSV and drew the chart, and the model's next step got the chart
    // as an image part of its prompt (the scripted model names the image parts it received, and reads the summary).
    expect(output).toMatch(/↳ \[1\] displayed an HTML table, a png image \(\d+ KiB\)/);
    expect(output).toMatch(/The chart came to me as an image \(image\/png, \d+ KiB\)/);
    expect(output).toContain("monthly units range from 120.0 to 210.0, the peak in May");
    // The model was told: the scripted plan reports the denial it received as a tool result.
    expect(output).toContain("You declined the export, so primes.txt stays in the sandbox.");
    expect(output).toContain("summary: completed");
    expect(existsSync(join(demo.directory, ".pai", "exports"))).toBe(false);
    expect(await poolContainers(demo.poolId)).toEqual([]);
  });

  test("SIGTERM during a run stops it and removes its sandboxes before the process exits", async ({
    demo,
  }) => {
    const run = demo.start({ stdin: "ignore" });
    await run.waitForOutput("$ python3 primes.py");
    expect((await poolContainers(demo.poolId)).length).toBeGreaterThan(0);
    run.child.kill("SIGTERM");
    const { code } = await run.exited;
    const output = run.output();
    expect(code, output).toBe(143);
    expect(output).toContain("SIGTERM: stopping the run and removing its sandbox");
    expect(output).toContain("summary: stopped by SIGTERM");
    expect(await poolContainers(demo.poolId)).toEqual([]);
    // The stopped run is stored as cancelled, not left running.
    const store = createSqliteThreadStore({ path: join(demo.directory, ".pai", "demo.db") });
    try {
      const runs = await store.listRuns(threadIdOf(output));
      expect(runs.map((record) => record.status)).toEqual(["cancelled"]);
    } finally {
      await store.close();
    }
  });

  test("SIGINT at the approval prompt keeps the approval pending and removes the sandboxes", async ({
    demo,
  }) => {
    const run = demo.start({ stdin: "pipe" });
    await run.waitForOutput("approve? [y/N]");
    expect((await poolContainers(demo.poolId)).length).toBeGreaterThan(0);
    run.child.kill("SIGINT");
    const { code } = await run.exited;
    const output = run.output();
    expect(code, output).toBe(130);
    expect(output).toContain("not answered: the approval stays pending in .pai/demo.db");
    expect(await poolContainers(demo.poolId)).toEqual([]);
    const store = createSqliteThreadStore({ path: join(demo.directory, ".pai", "demo.db") });
    try {
      const pending = await store.listPendingActions({ threadId: threadIdOf(output), status: "pending" });
      expect(pending.map((action) => action.toolName)).toEqual(["exportFile"]);
    } finally {
      await store.close();
    }
  });

  test("two demos at once in one directory: one waits at its approval while the other runs to the end and exits, then exports", async ({
    demo,
  }) => {
    // Same directory (one .pai/demo.db) and same pool id: two `npm run demo` in one checkout.
    const waiting = demo.start({ stdin: "pipe" });
    await waiting.waitForOutput("approve? [y/N]");
    const other = demo.start({ stdin: "ignore" });
    const otherExit = await other.exited;
    expect(otherExit.code, other.output()).toBe(0);
    expect(other.output()).toContain("summary: completed");

    waiting.child.stdin!.end("y\n");
    const { code } = await waiting.exited;
    const output = waiting.output();
    expect(code, output).toBe(0);
    expect(output).not.toContain("No such container");
    const threadId = threadIdOf(output);
    expect(threadId).not.toBe(threadIdOf(other.output()));
    expect(output).toContain(`primes.txt is now at .pai/exports/${threadId}/primes.txt.`);
    expect(output).toContain("summary: completed");
    const exported = readFileSync(join(demo.directory, ".pai", "exports", threadId, "primes.txt"), "utf8");
    expect(exported.split(/\s+/).filter(Boolean)).toEqual([
      "2",
      "3",
      "5",
      "7",
      "11",
      "13",
      "17",
      "19",
      "23",
      "29",
    ]);
    expect(await poolContainers(demo.poolId)).toEqual([]);
    const store = createSqliteThreadStore({ path: join(demo.directory, ".pai", "demo.db") });
    try {
      expect(await store.listLeases()).toEqual([]);
      expect(await store.listOwners()).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
