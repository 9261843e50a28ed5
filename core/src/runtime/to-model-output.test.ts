import type { UIMessageChunk } from "ai";
import { expect, it } from "vitest";
import { z } from "zod";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import { createScriptedModel } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { defineTool } from "../tools/define-tool.ts";
import { createAgentRuntime } from "./create-agent-runtime.ts";

// A 1×1 PNG.
const pngBase64 =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

const renderChart = defineTool({
  id: "renderChart",
  description: "Render a chart of the series",
  inputSchema: z.object({ series: z.array(z.number()) }),
  outputSchema: z.object({ title: z.string(), mediaType: z.literal("image/png"), base64: z.string() }),
  execute: (ctx) => ({
    title: `${ctx.input.series.length} points`,
    mediaType: "image/png" as const,
    base64: pngBase64,
  }),
  toModelOutput: ({ output }) => ({
    type: "content",
    value: [
      { type: "text", text: output.title },
      { type: "file-data", data: output.base64, mediaType: output.mediaType },
    ],
  }),
});

it("projects a chart stored as JSON into an image for the model, keeping JSON in the thread and the UI stream", async () => {
  const model = createScriptedModel({
    steps: [
      { toolCalls: [{ toolName: "renderChart", input: { series: [1, 2, 3] }, toolCallId: "c1" }] },
      { text: "I see a chart" },
    ],
  });
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { analyst: defineAgent({ tools: { renderChart } }) } }),
    store: createMemoryThreadStore(),
    model,
  });
  const run = await runtime.run({ agentId: "analyst", message: "chart it" });
  const chunks: UIMessageChunk[] = [];
  for await (const chunk of run.stream) chunks.push(chunk);
  await run.done;

  const toolMessage = model.doStreamCalls[1]?.prompt.find((message) => message.role === "tool");
  const result = toolMessage?.content[0] as {
    type: string;
    output: { type: string; value: Array<Record<string, unknown>> };
  };
  expect(result.output.type).toBe("content");
  const image = result.output.value.find((part) => part.type !== "text");
  expect(image).toMatchObject({ mediaType: "image/png" });
  expect(JSON.stringify(image)).toContain(pngBase64);

  const expected = { title: "3 points", mediaType: "image/png", base64: pngBase64 };
  const streamed = chunks.find((chunk) => chunk.type === "tool-output-available") as { output: unknown };
  expect(streamed.output).toEqual(expected);
  const stored = await runtime.store.loadMessages(run.threadId);
  const part = stored.flatMap((m) => m.parts).find((p) => p.type === "tool-renderChart") as {
    output: unknown;
  };
  expect(part.output).toEqual(expected);
});
