import { createAgentRuntime, createMemoryThreadStore, createPai, defineAgent, defineTool } from "@pai/core";
import { createScriptedModel, type ScriptedStep } from "@pai/core/testing";
import { convertToModelMessages, generateId, isStepCount, streamText, tool, type UIMessage } from "ai";
import { z } from "zod";
import { type BenchRow, ratioRow } from "./bench-row.ts";
import { type Summary, sideBySide } from "./stats.ts";

const STEPS = 5;
const inputSchema = z.object({ n: z.number() });
const script: ScriptedStep[] = [
  ...Array.from({ length: STEPS }, (_, i) => ({ toolCalls: [{ toolName: "increment", input: { n: i } }] })),
  { text: "done" },
];

/** The scripted loop, replayed from the start every time it ends. */
function cyclingModel() {
  return createScriptedModel({
    steps: [],
    fallback: (call) => script[call.prompt.filter((m) => m.role === "tool").length % script.length]!,
  });
}

function increment(n: number) {
  return { next: n + 1 };
}

/**
 * A 5-step tool loop through PAI (registry, runtime, memory store, UI stream, persisted thread) vs the same loop
 * written by hand on `streamText` (history → model messages, tools, UI stream, messages saved on finish).
 */
export async function benchRuntimeOverhead(options: { rounds: number }): Promise<BenchRow[]> {
  const paiTool = defineTool({
    id: "increment",
    description: "Add one",
    inputSchema,
    outputSchema: z.object({ next: z.number() }),
    execute: (ctx) => increment(ctx.input.n),
  });
  const pai = createPai({
    agents: { loop: defineAgent({ tools: { increment: paiTool }, maxSteps: STEPS + 1 }) },
  });
  const store = createMemoryThreadStore();

  const paiModel = cyclingModel();
  const runtime = createAgentRuntime({ pai, store, model: paiModel });
  const viaPai = async () => {
    const run = await runtime.run({ agentId: "loop", message: "count" });
    for await (const _chunk of run.stream) {
      // a client reading the stream
    }
    const result = await run.done;
    if (result.status !== "completed") throw new Error(`PAI run ended ${result.status}`);
  };

  // The hand-written AI SDK equivalent: load history, stream with tools, send the UI stream, save the messages.
  const saved = new Map<string, UIMessage[]>();
  const rawModel = cyclingModel();
  const raw = async () => {
    const model = rawModel;
    const tools = {
      increment: tool({ description: "Add one", inputSchema, execute: ({ n }) => increment(n) }),
    };
    const messages: UIMessage[] = [
      ...(saved.get("thread") ?? []).slice(0, 0),
      { id: generateId(), role: "user", parts: [{ type: "text", text: "count" }] },
    ];
    const result = streamText({
      model,
      messages: await convertToModelMessages(messages, { tools }),
      tools,
      stopWhen: isStepCount(STEPS + 1),
    });
    const stream = result.toUIMessageStream({
      originalMessages: messages,
      onFinish: ({ messages: finished }) => {
        saved.set("thread", finished);
      },
    });
    for await (const _chunk of stream) {
      // a client reading the stream
    }
  };

  // Several blocks, each side by side; the row reports the median block's ratio, so one GC-heavy stretch on
  // a busy 2-core machine does not decide the figure. All rounds also feed the percentiles.
  const blocks: Array<{ a: Summary; b: Summary; ratio: number }> = [];
  const roundsPerBlock = Math.max(20, Math.round(options.rounds / BLOCKS));
  for (let block = 0; block < BLOCKS; block++) {
    const { a, b } = await sideBySide(viaPai, raw, { rounds: roundsPerBlock, warmup: block === 0 ? 20 : 5 });
    blocks.push({ a, b, ratio: a.p50 / b.p50 });
  }
  await runtime.close();
  blocks.sort((x, y) => x.ratio - y.ratio);
  const median = blocks[Math.floor(blocks.length / 2)]!;
  return [
    {
      ...ratioRow({
        name: `${STEPS}-step tool loop: PAI vs raw streamText`,
        subject: median.a,
        baseline: median.b,
        target: "≤ 1.05",
      }),
      note: `median of ${BLOCKS} side-by-side blocks of ${roundsPerBlock} rounds; block ratios ${blocks.map((entry) => entry.ratio.toFixed(3)).join(", ")}`,
    },
  ];
}

const BLOCKS = 5;
