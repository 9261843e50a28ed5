// What PAI's tool spans record of a call: nothing of its input or output by default, both when the app opts in
// (`telemetry: { recordInputs, recordOutputs }`); and `isEnabled: false` leaves PAI's spans out. Official SDK, in
// memory.

import type { TelemetrySettings } from "@pai/core";
import { createAgentRuntime, createMemoryThreadStore, createPai, defineAgent, defineTool } from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { z } from "zod";
import { type InstalledOtel, installOtel } from "./fixtures/otel-sdk.ts";

const secret = "hunter2-input";
const greet = defineTool({
  id: "greet",
  description: "Greets someone",
  inputSchema: z.object({ name: z.string() }),
  execute: (ctx) => ({ greeting: `hello ${ctx.input.name}` }),
});
let otel: InstalledOtel;

beforeAll(() => {
  otel = installOtel();
});

afterAll(async () => {
  await otel.uninstall();
});

async function runWith(telemetry: TelemetrySettings) {
  otel.exporter.reset();
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { a: defineAgent({ tools: { greet } }) } }),
    store: createMemoryThreadStore(),
    model: createScriptedModel({
      steps: [{ toolCalls: [{ toolName: "greet", input: { name: secret } }] }, { text: "done" }],
    }),
    telemetry,
  });
  try {
    const result = await (await runtime.run({ agentId: "a", message: "greet" })).done;
    expect(result.status).toBe("completed");
  } finally {
    await runtime.close();
  }
  return otel.named("pai.tool");
}

it("records no tool input or output on pai.tool by default", async () => {
  const [span, ...others] = await runWith({});
  expect(others).toEqual([]);
  expect(span?.attributes).toMatchObject({ "pai.tool.id": "greet", "pai.tool.outcome": "output" });
  expect(JSON.stringify(span?.attributes)).not.toContain(secret);
  expect(span?.attributes["pai.tool.input"]).toBeUndefined();
  expect(span?.attributes["pai.tool.output"]).toBeUndefined();
});

it("records them when the app opts in", async () => {
  const [span] = await runWith({ recordInputs: true, recordOutputs: true });
  expect(JSON.parse(String(span?.attributes["pai.tool.input"]))).toEqual({ name: secret });
  expect(JSON.parse(String(span?.attributes["pai.tool.output"]))).toEqual({ greeting: `hello ${secret}` });
});

it("makes no PAI span with isEnabled: false", async () => {
  expect(await runWith({ isEnabled: false })).toEqual([]);
  expect(otel.named("pai.run")).toEqual([]);
});
