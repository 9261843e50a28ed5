import { OpenTelemetry } from "@ai-sdk/otel";
import { context, metrics, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { MeterProvider, MetricReader } from "@opentelemetry/sdk-metrics";
import { BatchSpanProcessor, InMemorySpanExporter, TracerProvider } from "@opentelemetry/sdk-trace";
import {
  type AgentRuntime,
  createAgentRuntime,
  createMemoryThreadStore,
  createPai,
  defineAgent,
  defineTool,
  type TelemetrySettings,
} from "@pai/core";
import { createScriptedModel, type ScriptedStep } from "@pai/core/testing";
import { dockerSandbox, sandbox } from "@pai/sandbox";
import { z } from "zod";
import { benchImage, benchPoolId } from "./bench-containers.ts";
import { type BenchRow, ratioRow } from "./bench-row.ts";
import { median, sideBySide, summarize } from "./stats.ts";

const STEPS = 5;
const BLOCKS = 5;
/** The model's script for a turn: `STEPS` calls of `toolName` (input `{ n }`), then a word. */
function turnModel(toolName: string) {
  const script: ScriptedStep[] = [
    ...Array.from({ length: STEPS }, (_, n) => ({ toolCalls: [{ toolName, input: { n } }] })),
    { text: "done" },
  ];
  return createScriptedModel({
    steps: [],
    fallback: (call) => {
      const sinceUser = call.prompt.length - call.prompt.findLastIndex((message) => message.role === "user");
      return script[call.prompt.slice(-sinceUser).filter((message) => message.role === "tool").length]!;
    },
  });
}
const increment = defineTool({
  id: "increment",
  description: "Add one",
  inputSchema: z.object({ n: z.number() }),
  outputSchema: z.object({ next: z.number() }),
  execute: (ctx) => ({ next: ctx.input.n + 1 }),
});
const shell = defineTool({
  id: "shell",
  description: "Run a command in this conversation's sandbox",
  inputSchema: z.object({ n: z.number() }),
  capabilities: { sandbox },
  execute: async (ctx) => {
    const result = await ctx.capabilities.sandbox.runCommand({
      command: "echo",
      args: [String(ctx.input.n)],
    });
    if (result.exitCode !== 0) throw new Error(`echo exited ${result.exitCode}`);
    return result.stdout;
  },
});

/** A reader collected only when asked: metrics are recorded, never exported. */
class HeldReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

/** Plays one run of `runtime` on `threadId` (a new thread when absent), reading its stream to the end. */
async function playRun(runtime: AgentRuntime, agentId: string, threadId?: string): Promise<void> {
  const run = await runtime.run({ agentId, message: "count", ...(threadId ? { threadId } : {}) });
  for await (const _chunk of run.stream) {
    // a client reading the stream
  }
  const result = await run.done;
  if (result.status !== "completed") throw new Error(`run ended ${result.status}`);
}

/** A runtime playing the 5-step scripted tool loop (a new thread each run), with `telemetry`. */
function loopRuntime(telemetry: TelemetrySettings) {
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { loop: defineAgent({ tools: { increment }, maxSteps: STEPS + 1 }) } }),
    store: createMemoryThreadStore(),
    model: turnModel("increment"),
    telemetry,
  });
  return { runtime, run: () => playRun(runtime, "loop") };
}

/**
 * A runtime whose turn runs 5 commands in its thread's sandbox (a real container of the pool), with `telemetry`:
 * the turns of one block continue one conversation, a new one (its sandbox from the warm pool) each block. No
 * checkpoint of the workspace after each turn (its program's start would be most of a turn): the runtime's and the
 * commands' own work.
 */
async function sandboxRuntime(telemetry: TelemetrySettings, name: string) {
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { coder: defineAgent({ tools: { shell }, maxSteps: STEPS + 1 }) } }),
    store: createMemoryThreadStore(),
    model: turnModel("shell"),
    checkpoints: false,
    capabilities: {
      sandbox: dockerSandbox({
        image: await benchImage(),
        poolId: benchPoolId(name),
        pool: { min: 1, max: 2 },
      }),
    },
    telemetry,
  });
  let conversation = 0;
  let threadId = `${name}-0`;
  return {
    runtime,
    run: () => playRun(runtime, "coder", threadId),
    async nextConversation() {
      await runtime.deleteThread(threadId);
      threadId = `${name}-${++conversation}`;
    },
  };
}

/**
 * Blocks of side-by-side rounds; the row's ratio is the median of every round's own ratio (`a`'s run over the `b`
 * run next to it): a GC pause or a slow command lands in one round's ratio, not in a whole side's percentile.
 */
async function pairedRatioRow(
  name: string,
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
  options: { rounds: number; between?: () => unknown; target?: string },
): Promise<BenchRow> {
  const { rounds, between, target } = options;
  const all: Array<{ a: number; b: number }> = [];
  const blockRatios: number[] = [];
  const roundsPerBlock = Math.max(20, Math.round(rounds / BLOCKS));
  for (let block = 0; block < BLOCKS; block++) {
    const measured = await sideBySide(a, b, { rounds: roundsPerBlock, warmup: block === 0 ? 50 : 5 });
    all.push(...measured.rounds);
    blockRatios.push(median(measured.rounds.map((round) => round.a / round.b)));
    await between?.();
  }
  return ratioRow({
    name,
    subject: summarize(all.map((round) => round.a)),
    baseline: summarize(all.map((round) => round.b)),
    ratio: median(all.map((round) => round.a / round.b)),
    ...(target ? { target } : {}),
    note: `median of ${all.length} side-by-side rounds' ratios (${BLOCKS} blocks of ${roundsPerBlock}); blocks' medians ${blockRatios.map((ratio) => ratio.toFixed(3)).join(", ")}`,
  });
}

/**
 * What tracing costs a turn through PAI (memory store, UI stream read to its end), each pair side by side in one
 * process. The 5-step scripted tool loop (a tool that adds one: PAI's own work and nothing else, the worst case):
 * with no SDK registered, PAI's default (its spans through the API's no-op provider) against telemetry off; then,
 * with the official SDK registered (spans batched to memory, as an app batches them to a collector, and cleared
 * between blocks; metrics recorded), first the scale: one empty span per run that PAI does not make (what the SDK
 * takes for a span amid a run's work: several times what it takes in a tight loop), then PAI's spans and metrics on
 * against off, and PAI's plus the AI SDK's (`@ai-sdk/otel`) against off. Last, with the SDK, a coding agent's turn:
 * 5 commands in the thread's sandbox, PAI's spans (tools, commands) on against off.
 */
export async function benchTelemetryOverhead(options: { rounds: number }): Promise<BenchRow[]> {
  const off = loopRuntime({ isEnabled: false });
  const on = loopRuntime({});
  const withAiSdk = loopRuntime({ integrations: new OpenTelemetry() });
  const sandboxOff = await sandboxRuntime({ isEnabled: false }, "telemetry-off");
  const sandboxOn = await sandboxRuntime({}, "telemetry-on");
  const rows: BenchRow[] = [];
  try {
    const target = "≤ 1.05";
    rows.push(
      await pairedRatioRow("telemetry, no SDK registered: PAI default vs off", on.run, off.run, {
        rounds: options.rounds,
        target,
      }),
    );
    const exporter = new InMemorySpanExporter();
    const tracerProvider = new TracerProvider({ spanProcessors: [new BatchSpanProcessor({ exporter })] });
    const meterProvider = new MeterProvider({ readers: [new HeldReader()] });
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(tracerProvider);
    metrics.setGlobalMeterProvider(meterProvider);
    try {
      const loop = { rounds: options.rounds, between: () => exporter.reset() };
      // The scale of the rows below: what the SDK itself takes for one span amid a run's work.
      const tracer = trace.getTracer("pai-bench");
      const offWithEmptySpan = async () => {
        tracer.startSpan("pai-bench.empty").end();
        await off.run();
      };
      rows.push(
        await pairedRatioRow(
          "tracing on (SDK, batch to memory): one empty span of the bench's own per run, PAI's off, vs off",
          offWithEmptySpan,
          off.run,
          loop,
        ),
        await pairedRatioRow("tracing on (SDK, batch to memory) vs off: PAI's spans", on.run, off.run, {
          ...loop,
          target,
        }),
        await pairedRatioRow(
          "tracing on (SDK, batch to memory) vs off: PAI's and the AI SDK's spans",
          withAiSdk.run,
          off.run,
          { ...loop, target },
        ),
        await pairedRatioRow(
          "tracing on (SDK, batch to memory) vs off: PAI's spans, a turn of 5 sandbox commands",
          sandboxOn.run,
          sandboxOff.run,
          {
            rounds: options.rounds,
            target,
            between: async () => {
              exporter.reset();
              await Promise.all([sandboxOn.nextConversation(), sandboxOff.nextConversation()]);
            },
          },
        ),
      );
    } finally {
      await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()]);
      trace.disable();
      metrics.disable();
      context.disable();
    }
  } finally {
    await Promise.all([off, on, withAiSdk, sandboxOff, sandboxOn].map((entry) => entry.runtime.close()));
  }
  return rows;
}
