import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AgentRuntime,
  createAgentRuntime,
  createPai,
  createPaiHandler,
  createSqliteThreadStore,
  defineAgent,
  defineTool,
  type ThreadStore,
} from "@pai/core";
import { createPostgresThreadStore } from "@pai/core/postgres";
import { createScriptedModel } from "@pai/core/testing";
import { z } from "zod";
import { createTestSchema } from "../tests/fixtures/test-postgres.ts";
import { type BenchRow, ratioRow } from "./bench-row.ts";
import { summarize } from "./stats.ts";

/** The owner's poll interval the rows are measured with (the runtime's default). */
const STOP_POLL_INTERVAL_MS = 250;

/**
 * How long a Stop takes to end a run, from the request to the run's end (cancelled, stored, its thread free): sent
 * to another runtime on the same store (it records the request; the owner polls for it) vs sent to the runtime running
 * it, side by side, on a SQLite file and on Postgres. Each round starts a run whose tool blocks until stopped.
 */
export async function benchCrossProcessStop(options: { rounds: number }): Promise<BenchRow[]> {
  /** Threads whose tool is awaited, by thread id (set before the run starts: its tool may run before `run` returns). */
  const started = new Map<string, () => void>();
  const waitForStop = defineTool({
    id: "waitForStop",
    description: "Runs until the run is stopped",
    inputSchema: z.object({}),
    execute: (ctx) => {
      started.get(ctx.thread.threadId)?.();
      return new Promise((_, reject) =>
        ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)),
      );
    },
  });
  const caller = { userId: "bench" };
  const pai = createPai({ agents: { a: defineAgent({ tools: { waitForStop } }) } });
  const runtimeOn = (store: ThreadStore, ownerId: string) =>
    createAgentRuntime({
      pai,
      store,
      ownerId,
      stopPollIntervalMs: STOP_POLL_INTERVAL_MS,
      model: createScriptedModel({
        steps: [],
        fallback: (call) =>
          call.prompt.at(-1)?.role === "tool"
            ? { text: "stopped" }
            : { toolCalls: [{ toolName: "waitForStop", input: {} }] },
      }),
    });
  const stopVia = (runtime: AgentRuntime) => {
    const handler = createPaiHandler({ runtime, authenticate: () => caller });
    return (runId: string) => handler(new Request(`http://bench/api/runs/${runId}/stop`, { method: "POST" }));
  };

  /** Milliseconds from sending the stop (through `stop`) to the end of a run `owner` runs. */
  async function stopOnce(owner: AgentRuntime, stop: (runId: string) => Promise<Response>): Promise<number> {
    const threadId = randomUUID();
    const toolRuns = new Promise<void>((resolve) => started.set(threadId, resolve));
    const run = await owner.run({ agentId: "a", threadId, identity: caller, message: "wait" });
    await toolRuns;
    started.delete(threadId);
    // A stop comes at any moment of the owner's poll interval, not just after the run started.
    await new Promise((resolve) => setTimeout(resolve, Math.random() * STOP_POLL_INTERVAL_MS));
    const sentAt = performance.now();
    const answer = (await (await stop(run.runId)).json()) as { stopped?: boolean };
    if (!answer.stopped) {
      run.cancel();
      await run.done;
      throw new Error(`the stop was refused: ${JSON.stringify(answer)}`);
    }
    const result = await run.done;
    const took = performance.now() - sentAt;
    if (result.status !== "cancelled") throw new Error(`the stopped run ended ${result.status}`);
    return took;
  }

  async function measure(name: string, open: () => Promise<ThreadStore>): Promise<BenchRow> {
    const owner = runtimeOn(await open(), "bench-owner");
    const other = runtimeOn(await open(), "bench-other");
    try {
      const remote = stopVia(other);
      const local = stopVia(owner);
      const remoteMs: number[] = [];
      const localMs: number[] = [];
      for (let round = -2; round < options.rounds; round++) {
        // Alternating order; the first two rounds warm up.
        const remoteFirst = round % 2 === 0;
        const first = await stopOnce(owner, remoteFirst ? remote : local);
        const second = await stopOnce(owner, remoteFirst ? local : remote);
        if (round < 0) continue;
        remoteMs.push(remoteFirst ? first : second);
        localMs.push(remoteFirst ? second : first);
      }
      return ratioRow({
        name: `stop a run from another process vs from its own (${name})`,
        subject: summarize(remoteMs),
        baseline: summarize(localMs),
        note:
          `request → run ended (cancelled, stored, thread free); the owner polls its running runs every ` +
          `${STOP_POLL_INTERVAL_MS} ms (stopPollIntervalMs); each stop is sent at a random moment of that interval ` +
          "(the same wait before either kind), so a remote stop waits about half of it on average",
      });
    } finally {
      await Promise.all([owner.close(), other.close()]);
    }
  }

  const directory = mkdtempSync(join(tmpdir(), "pai-bench-stop-"));
  const schema = createTestSchema();
  try {
    const path = join(directory, "threads.db");
    return [
      await measure("SQLite file", async () => createSqliteThreadStore({ path })),
      await measure("Postgres", () =>
        createPostgresThreadStore({ connectionString: schema.connectionString, schema: schema.name }),
      ),
    ];
  } finally {
    await schema.drop();
    rmSync(directory, { recursive: true, force: true });
  }
}
