import { OpenTelemetry } from "@ai-sdk/otel";
import { context, metrics, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import { BatchSpanProcessor, InMemorySpanExporter, TracerProvider } from "@opentelemetry/sdk-trace";
import {
  createAgentRuntime,
  createMemoryThreadStore,
  createPai,
  defineAgent,
  defineTool,
  type TelemetrySettings,
} from "@pai/core";
import { createScriptedModel, type ScriptedStep } from "@pai/core/testing";
import { z } from "zod";
import { type BenchRow, ratioRow } from "./bench-row.ts";
import { type Summary, sideBySide } from "./stats.ts";

const STEPS = 5;
const BLOCKS = 5;
const script: ScriptedStep[] = [
  ...Array.from({ length: STEPS }, (_, i) => ({ toolCalls: [{ toolName: "increment", input: { n: i } }] })),
  { text: "done" },
];
const increment = defineTool({
  id: "increment",
  description: "Add one",
  inputSchema: z.object({ n: z.number() }),
  outputSchema: z.object({ next: z.number() }),
  execute: (ctx) => ({ next: ctx.input.n + 1 }),
});

/** A reader collected only when asked: metrics are recorded, never exported. */
class HeldReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

/** A runtime running the 5-step scripted tool loop, with `telemetry`; `run` plays it once, reading the stream. */
function loopRuntime(telemetry: TelemetrySettings) {
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { loop: defineAgent({ tools: { increment }, maxSteps: STEPS + 1 }) } }),
    store: createMemoryThreadStore(),
    model: createScriptedModel({
      steps: [],
      fallback: (call) => script[call.prompt.filter((m) => m.role === "tool").length % script.length]!,
    }),
    telemetry,
  });
  return {
    runtime,
    async run() {
      const run = await runtime.run({ agentId: "loop", message: "count" });
      for await (const _chunk of run.stream) {
        // a client reading the stream
      }
      const result = await run.done;
      if (result.status !== "completed") throw new Error(`run ended ${result.status}`);
    },
  };
}

/** Blocks of side-by-side rounds; the row is the median block's ratio (one GC-heavy stretch does not decide it). */
async function medianOfBlocks(
  name: string,
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
  rounds: number,
  between?: () => void,
): Promise<BenchRow> {
  const blocks: Array<{ a: Summary; b: Summary; ratio: number }> = [];
  const roundsPerBlock = Math.max(20, Math.round(rounds / BLOCKS));
  for (let block = 0; block < BLOCKS; block++) {
    const { a: sa, b: sb } = await sideBySide(a, b, { rounds: roundsPerBlock, warmup: block === 0 ? 20 : 5 });
    blocks.push({ a: sa, b: sb, ratio: sa.p50 / sb.p50 });
    between?.();
  }
  blocks.sort((x, y) => x.ratio - y.ratio);
  const median = blocks[Math.floor(blocks.length / 2)]!;
  return {
    ...ratioRow({ name, subject: median.a, baseline: median.b, target: "≤ 1.05" }),
    note: `median of ${BLOCKS} side-by-side blocks of ${roundsPerBlock} rounds; block ratios ${blocks.map((entry) => entry.ratio.toFixed(3)).join(", ")}`,
  };
}

/**
 * What tracing costs a 5-step tool loop through PAI (memory store, UI stream read to its end), each pair side by
 * side in one process: with no SDK registered, PAI's default (its spans through the API's no-op provider) against
 * telemetry off; then, with the official SDK registered (spans batched to memory, as an app batches them to a collector, and cleared between blocks; metrics
 * recorded), PAI's spans and metrics on against off, and PAI's plus the AI SDK's (`@ai-sdk/otel`) against off.
 */
export async function benchTelemetryOverhead(options: { rounds: number }): Promise<BenchRow[]> {
  const off = loopRuntime({ isEnabled: false });
  const on = loopRuntime({});
  const withAiSdk = loopRuntime({ integrations: new OpenTelemetry() });
  const rows: BenchRow[] = [];
  try {
    rows.push(
      await medianOfBlocks(
        "telemetry, no SDK registered: PAI default vs off",
        on.run,
        off.run,
        options.rounds,
      ),
    );
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new TracerProvider({ spanProcessors: [new BatchSpanProcessor({ exporter })] });
    const meterProvider = new MeterProvider({ readers: [new HeldReader()] });
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(tracerProvider);
    metrics.setGlobalMeterProvider(meterProvider);
    try {
      const clear = () => exporter.reset();
      rows.push(
        await medianOfBlocks(
          "tracing on (SDK, batch to memory) vs off: PAI's spans",
          on.run,
          off.run,
          options.rounds,
          clear,
        ),
        await medianOfBlocks(
          "tracing on (SDK, batch to memory) vs off: PAI's and the AI SDK's spans",
          withAiSdk.run,
          off.run,
          options.rounds,
          clear,
        ),
      );
    } finally {
      await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()]);
      trace.disable();
      metrics.disable();
      context.disable();
    }
  } finally {
    await Promise.all([off.runtime.close(), on.runtime.close(), withAiSdk.runtime.close()]);
  }
  return rows;
}
