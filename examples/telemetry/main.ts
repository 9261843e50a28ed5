// PAI with OpenTelemetry: one run of an agent whose tool writes and runs a program in a Docker sandbox, traced and
// measured through the official SDK. With OTEL_EXPORTER_OTLP_ENDPOINT set (e.g. http://127.0.0.1:4318), the spans go
// there over OTLP/HTTP; without it, they are printed to the console. The run's metrics are printed when it ends.
// A real model comes from the environment (see examples/shared/model-from-env.ts); without one, a scripted model
// plays the run, so no key is needed.
//   npm start -w @pai/example-telemetry
import { OpenTelemetry } from "@ai-sdk/otel";
import { context, metrics, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  ConsoleMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from "@opentelemetry/sdk-metrics";
import { BatchSpanProcessor, ConsoleSpanExporter, TracerProvider } from "@opentelemetry/sdk-trace";
import { createAgentRuntime, createMemoryThreadStore, createPai, defineAgent, defineTool } from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { logRuntimeError } from "@pai/examples-shared/log-runtime-error";
import { modelFromEnv } from "@pai/examples-shared/model-from-env";
import { dockerSandbox, sandbox } from "@pai/sandbox";
import { registerTelemetry } from "ai";
import { z } from "zod";

// 1. The SDK, registered before the runtime is made: PAI and the AI SDK find it through @opentelemetry/api.
const endpoint = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
const resource = resourceFromAttributes({ "service.name": "pai-telemetry-example" });
const tracerProvider = new TracerProvider({
  resource,
  // The OTLP exporter reads OTEL_EXPORTER_OTLP_ENDPOINT itself and posts to <endpoint>/v1/traces.
  spanProcessors: [
    new BatchSpanProcessor({ exporter: endpoint ? new OTLPTraceExporter() : new ConsoleSpanExporter() }),
  ],
});
const meterProvider = new MeterProvider({
  resource,
  readers: [
    new PeriodicExportingMetricReader({
      exporter: new ConsoleMetricExporter(),
      exportIntervalMillis: 60_000,
    }),
  ],
});
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(tracerProvider);
metrics.setGlobalMeterProvider(meterProvider);
// The AI SDK's own spans (invoke_agent, chat, execute_tool) nest under PAI's pai.run.
registerTelemetry(new OpenTelemetry());

// 2. An agent with one sandbox tool.
const runProgram = defineTool({
  id: "runProgram",
  description: "Write a Python program to the sandbox and run it; returns its exit code and output.",
  inputSchema: z.object({ path: z.string(), source: z.string() }),
  capabilities: { sandbox },
  execute: async (ctx) => {
    await ctx.capabilities.sandbox.writeFiles([{ path: ctx.input.path, content: ctx.input.source }]);
    return ctx.capabilities.sandbox.runCommand({ command: "python3", args: [ctx.input.path] });
  },
});
const selected = modelFromEnv();
const model =
  selected.model ??
  createScriptedModel({
    steps: [
      {
        text: "I will compute it in the sandbox.",
        toolCalls: [
          {
            toolName: "runProgram",
            input: { path: "squares.py", source: "print(sum(n * n for n in range(10)))\n" },
          },
        ],
      },
      { text: "The sum of the first ten squares is 285." },
    ],
  });
const runtime = createAgentRuntime({
  pai: createPai({
    agents: {
      assistant: defineAgent({
        instructions: "Answer with the help of the sandbox (python3, no network).",
        tools: { runProgram },
        onRuntimeError: logRuntimeError("[pai telemetry]", console.error),
      }),
    },
  }),
  store: createMemoryThreadStore(),
  model,
  capabilities: {
    sandbox: dockerSandbox({
      pool: { min: 1, max: 2 },
      ...(process.env.PAI_TELEMETRY_POOL_ID ? { poolId: process.env.PAI_TELEMETRY_POOL_ID } : {}),
    }),
  },
  // PAI records no tool input, output or command text unless asked: this example asks for the command's text.
  telemetry: { recordCommands: true },
});

// 3. One run, then everything flushed.
try {
  console.log(
    `model: ${selected.description ?? "scripted (set OPENAI_API_KEY or ANTHROPIC_API_KEY for a real one)"}`,
  );
  console.log(`spans: ${endpoint ? `OTLP/HTTP to ${endpoint}` : "printed below"}`);
  const run = await runtime.run({
    agentId: "assistant",
    message: "What is the sum of the first ten squares?",
  });
  const result = await run.done;
  console.log(`run ${result.runId}: ${result.status}: ${result.text}`);
  process.exitCode = result.status === "completed" ? 0 : 1;
} finally {
  await runtime.close();
  await tracerProvider.shutdown();
  await meterProvider.shutdown();
}
