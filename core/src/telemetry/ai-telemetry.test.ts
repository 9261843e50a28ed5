// What the AI SDK hears of a PAI run: nothing it would build for nobody, and everything as soon as someone listens —
// an integration registered with `registerTelemetry` (even after the runtime was made), one given in the settings, or
// a subscriber to the AI SDK's tracing channel; an app's `isEnabled: false` silences it whoever listens.
import { tracingChannel } from "node:diagnostics_channel";
import { AI_SDK_TELEMETRY_TRACING_CHANNEL, registerTelemetry } from "ai";
import { afterEach, expect, it } from "vitest";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import { createAgentRuntime } from "../runtime/create-agent-runtime.ts";
import { createScriptedModel } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { aiTelemetryForCall } from "./ai-telemetry.ts";
import type { TelemetrySettings } from "./pai-telemetry.ts";

const registered = globalThis as { AI_SDK_TELEMETRY_INTEGRATIONS?: unknown[] };

afterEach(() => {
  registered.AI_SDK_TELEMETRY_INTEGRATIONS = [];
});

async function runOnce(telemetry?: TelemetrySettings) {
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { a: defineAgent({}) } }),
    store: createMemoryThreadStore(),
    model: createScriptedModel({ steps: [{ text: "hi" }] }),
    ...(telemetry ? { telemetry } : {}),
  });
  try {
    const result = await (await runtime.run({ agentId: "a", message: "hello" })).done;
    expect(result.status).toBe("completed");
  } finally {
    await runtime.close();
  }
}

it("turns the AI SDK's telemetry off for a call only while nothing can take it", () => {
  expect(aiTelemetryForCall(undefined)).toEqual({ isEnabled: false });
  expect(aiTelemetryForCall({ functionId: "f" })).toEqual({ functionId: "f", isEnabled: false });
  const integrations = { onStepFinish() {} };
  expect(aiTelemetryForCall({ integrations })).toEqual({ integrations });
  expect(aiTelemetryForCall({ isEnabled: false })).toEqual({ isEnabled: false });
  registerTelemetry(integrations);
  expect(aiTelemetryForCall(undefined)).toBeUndefined();
  expect(aiTelemetryForCall({ functionId: "f" })).toEqual({ functionId: "f" });
});

it("a registered integration hears a run's steps, registered after the runtime was made", async () => {
  const steps: unknown[] = [];
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { a: defineAgent({}) } }),
    store: createMemoryThreadStore(),
    model: createScriptedModel({ steps: [{ text: "hi" }] }),
  });
  try {
    registerTelemetry({ onStepFinish: (event: unknown) => void steps.push(event) });
    await (await runtime.run({ agentId: "a", message: "hello" })).done;
  } finally {
    await runtime.close();
  }
  expect(steps).toHaveLength(1);
});

it("a subscriber to the AI SDK's tracing channel hears a run's model call, unless the app turned telemetry off", async () => {
  const heard: unknown[] = [];
  const channel = tracingChannel(AI_SDK_TELEMETRY_TRACING_CHANNEL);
  const subscriber = {
    start: (message: unknown) => void heard.push(message),
    end() {},
    asyncStart() {},
    asyncEnd() {},
    error() {},
  };
  channel.subscribe(subscriber);
  try {
    await runOnce();
    expect(heard.length).toBeGreaterThan(0);
    heard.length = 0;
    await runOnce({ isEnabled: false });
    expect(heard).toEqual([]);
  } finally {
    channel.unsubscribe(subscriber);
  }
});
