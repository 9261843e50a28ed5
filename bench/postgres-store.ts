import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createAgentRuntime,
  createPai,
  createSqliteThreadStore,
  defineAgent,
  defineTool,
  type ThreadStore,
} from "@pai/core";
import { createPostgresThreadStore } from "@pai/core/postgres";
import { createScriptedModel, type ScriptedStep } from "@pai/core/testing";
import { z } from "zod";
import { createTestSchema } from "../tests/fixtures/test-postgres.ts";
import { type BenchRow, ratioRow } from "./bench-row.ts";
import { type Summary, sideBySide } from "./stats.ts";

const STEPS = 5;
const BLOCKS = 5;
const script: ScriptedStep[] = [
  ...Array.from({ length: STEPS }, (_, i) => ({ toolCalls: [{ toolName: "increment", input: { n: i } }] })),
  { text: "done" },
];

/**
 * The same 5-step tool loop through PAI's runtime, once on the Postgres store and once on the SQLite store
 * (a file, WAL), side by side: every run creates its thread, records its run, commits its messages.
 */
export async function benchPostgresStore(options: { rounds: number }): Promise<BenchRow[]> {
  const increment = defineTool({
    id: "increment",
    description: "Add one",
    inputSchema: z.object({ n: z.number() }),
    outputSchema: z.object({ next: z.number() }),
    execute: (ctx) => ({ next: ctx.input.n + 1 }),
  });
  const pai = createPai({ agents: { loop: defineAgent({ tools: { increment }, maxSteps: STEPS + 1 }) } });
  const loopOn = (store: ThreadStore) => {
    const runtime = createAgentRuntime({
      pai,
      store,
      model: createScriptedModel({
        steps: [],
        fallback: (call) => script[call.prompt.filter((m) => m.role === "tool").length % script.length]!,
      }),
    });
    const loop = async () => {
      const run = await runtime.run({ agentId: "loop", message: "count" });
      for await (const _chunk of run.stream) {
        // a client reading the stream
      }
      const result = await run.done;
      if (result.status !== "completed") throw new Error(`run ended ${result.status}`);
    };
    return { runtime, loop };
  };

  const directory = mkdtempSync(join(tmpdir(), "pai-bench-store-"));
  const schema = createTestSchema();
  const [{ synchronous_commit: synchronousCommit }] = (await schema.sql("SHOW synchronous_commit")) as [
    { synchronous_commit: string },
  ];
  const sqlite = loopOn(createSqliteThreadStore({ path: join(directory, "threads.db") }));
  try {
    const postgres = loopOn(
      await createPostgresThreadStore({ connectionString: schema.connectionString, schema: schema.name }),
    );
    try {
      // Several blocks side by side; the row reports the median block's ratio (one busy stretch on a shared
      // 2-core machine does not decide it).
      const blocks: Array<{ a: Summary; b: Summary; ratio: number }> = [];
      const roundsPerBlock = Math.max(20, Math.round(options.rounds / BLOCKS));
      for (let block = 0; block < BLOCKS; block++) {
        const { a, b } = await sideBySide(postgres.loop, sqlite.loop, {
          rounds: roundsPerBlock,
          warmup: block === 0 ? 20 : 5,
        });
        blocks.push({ a, b, ratio: a.p50 / b.p50 });
      }
      blocks.sort((x, y) => x.ratio - y.ratio);
      const median = blocks[Math.floor(blocks.length / 2)]!;
      return [
        ratioRow({
          name: `${STEPS}-step tool loop: Postgres store vs SQLite store`,
          subject: median.a,
          baseline: median.b,
          target: "≤ 1.5",
          note:
            `median of ${BLOCKS} side-by-side blocks of ${roundsPerBlock} runs; block ratios ` +
            `${blocks.map((entry) => entry.ratio.toFixed(3)).join(", ")}; Postgres synchronous_commit=` +
            `${synchronousCommit} (scripts/postgres sets off: a crash may lose the last commits, as with ` +
            "SQLite's WAL and synchronous=NORMAL)",
        }),
      ];
    } finally {
      await postgres.runtime.close();
    }
  } finally {
    await sqlite.runtime.close();
    await schema.drop();
    rmSync(directory, { recursive: true, force: true });
  }
}
