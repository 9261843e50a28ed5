// PAI's OpenTelemetry spans and metrics, read with the official SDK, for a scripted run whose tools use a real
// sandbox on the real engine: the span tree (pai.run > the AI SDK's spans > pai.tool > pai.capability.acquire,
// pai.sandbox.*), its attributes, a failing tool's error code, and the metrics the run moved.
import { SpanStatusCode } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import { createAgentRuntime, createMemoryThreadStore, createPai, defineAgent, defineTool } from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { dockerSandbox, sandbox } from "@pai/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type InstalledOtel, installOtel, parentIdOf } from "../fixtures/otel-sdk.ts";
import { dockerOptedOut, poolContainers, sandboxImage, uniquePoolId } from "./docker-helpers.ts";

const shell = defineTool({
  id: "shell",
  description: "Write a file and run a command in the sandbox",
  inputSchema: z.object({ secret: z.string() }),
  capabilities: { sandbox },
  execute: async (ctx) => {
    await ctx.capabilities.sandbox.writeFiles([{ path: "note.txt", content: "hello telemetry" }]);
    return ctx.capabilities.sandbox.runCommand({
      command: `cat note.txt; echo ${ctx.input.secret} >/dev/null`,
    });
  },
});
const readOutside = defineTool({
  id: "escape",
  description: "Read a file outside the workspace (fails)",
  inputSchema: z.object({}),
  capabilities: { sandbox },
  execute: (ctx) => ctx.capabilities.sandbox.readFile("../../etc/passwd"),
});

const poolId = uniquePoolId("telemetry");
let otel: InstalledOtel;

beforeAll(() => {
  otel = installOtel();
});
afterAll(async () => {
  await otel.uninstall();
  expect(await poolContainers(poolId)).toEqual([]);
});

/** The spans from `span` up to the root, nearest first. */
function ancestors(spans: ReadableSpan[], span: ReadableSpan): ReadableSpan[] {
  const byId = new Map(spans.map((candidate) => [candidate.spanContext().spanId, candidate]));
  const chain: ReadableSpan[] = [];
  for (let parent = byId.get(parentIdOf(span) ?? ""); parent; parent = byId.get(parentIdOf(parent) ?? ""))
    chain.push(parent);
  return chain;
}

describe.skipIf(dockerOptedOut)("telemetry of a run with a sandbox", () => {
  it("gives the span tree with its attributes, a failing tool's code, and the run's metrics", async () => {
    const model = createScriptedModel({
      steps: [
        { toolCalls: [{ toolName: "shell", input: { secret: "hunter2" }, toolCallId: "s1" }] },
        { toolCalls: [{ toolName: "escape", input: {}, toolCallId: "e1" }] },
        { text: "done" },
      ],
    });
    const runtime = createAgentRuntime({
      pai: createPai({ agents: { coder: defineAgent({ tools: { shell, escape: readOutside } }) } }),
      store: createMemoryThreadStore(),
      model,
      capabilities: { sandbox: dockerSandbox({ image: sandboxImage, poolId, pool: { min: 1, max: 2 } }) },
    });
    try {
      const run = await runtime.run({ agentId: "coder", message: "go" });
      const result = await run.done;
      expect(result.status).toBe("completed");
      await otel.collect();

      const spans = otel.spans();
      const [runSpan] = otel.named("pai.run");
      expect(otel.named("pai.run")).toHaveLength(1);
      expect(runSpan!.attributes).toMatchObject({
        "pai.run.id": run.runId,
        "pai.thread.id": run.threadId,
        "pai.agent.id": "coder",
        "pai.run.kind": "message",
        "pai.run.status": "completed",
      });
      const runId = runSpan!.spanContext().spanId;
      const traceId = runSpan!.spanContext().traceId;
      // The AI SDK's own spans nest under the run's.
      const agentSpans = spans.filter((span) => span.name.startsWith("invoke_agent"));
      expect(agentSpans).toHaveLength(1);
      expect(parentIdOf(agentSpans[0]!)).toBe(runId);

      const tools = otel.named("pai.tool");
      const shellSpan = tools.find((span) => span.attributes["pai.tool.id"] === "shell")!;
      expect(shellSpan.attributes).toMatchObject({
        "pai.tool.name": "shell",
        "pai.tool.registration": "shell",
        "pai.tool.call_id": "s1",
        "pai.tool.path": ["shell"],
        "pai.run.id": run.runId,
        "pai.tool.outcome": "output",
      });
      expect(shellSpan.spanContext().traceId).toBe(traceId);
      const shellParent = ancestors(spans, shellSpan)[0]!;
      expect(shellParent.name).toBe("execute_tool shell");
      expect(ancestors(spans, shellSpan).map((span) => span.name)).toContain("pai.run");
      // No input, output or command text on PAI's spans unless the app opts in (the AI SDK's follow its defaults).
      expect(Object.keys(shellSpan.attributes)).not.toContain("pai.tool.input");
      expect(Object.keys(shellSpan.attributes)).not.toContain("pai.tool.output");
      const paiSpans = spans.filter((span) => span.name.startsWith("pai."));
      expect(JSON.stringify(paiSpans.map((span) => [span.attributes, span.events]))).not.toContain("hunter2");

      const [acquire] = otel.named("pai.capability.acquire");
      expect(otel.named("pai.capability.acquire")).toHaveLength(1);
      expect(parentIdOf(acquire!)).toBe(shellSpan.spanContext().spanId);
      expect(acquire!.attributes).toMatchObject({
        "pai.capability.name": "sandbox",
        "pai.capability.lifetime": "thread",
        "pai.capability.source": "warm",
      });
      expect(typeof acquire!.attributes["pai.capability.engine"]).toBe("string");
      expect(acquire!.attributes["pai.capability.wait_ms"]).toBeGreaterThanOrEqual(0);
      expect(acquire!.attributes["pai.capability.create_ms"]).toBeGreaterThan(0);

      const [command] = otel.named("pai.sandbox.command");
      expect(parentIdOf(command!)).toBe(shellSpan.spanContext().spanId);
      expect(command!.attributes).toMatchObject({
        "pai.sandbox.exit_code": 0,
        "pai.sandbox.termination": "exit",
        "pai.sandbox.stdout_bytes": "hello telemetry".length,
      });
      expect(command!.attributes).not.toHaveProperty("pai.sandbox.command.text");
      const files = otel.named("pai.sandbox.files");
      expect(files.map((span) => span.attributes)).toEqual([
        {
          "pai.sandbox.files.operation": "write",
          "pai.sandbox.files.count": 1,
          "pai.sandbox.files.bytes": 15,
        },
      ]);
      expect(parentIdOf(files[0]!)).toBe(shellSpan.spanContext().spanId);

      const escapeSpan = tools.find((span) => span.attributes["pai.tool.id"] === "escape")!;
      expect(escapeSpan.status.code).toBe(SpanStatusCode.ERROR);
      expect(escapeSpan.attributes).toMatchObject({
        "pai.tool.outcome": "error",
        "pai.tool.error.kind": "thrown",
        "pai.error.code": "PATH_OUTSIDE_WORKSPACE",
      });
      expect(escapeSpan.events.map((event) => event.name)).toContain("exception");

      expect(otel.points("pai.runs")).toContainEqual({
        attributes: { "pai.run.status": "completed", "pai.agent.id": "coder" },
        value: 1,
      });
      expect(otel.points("pai.sandbox.commands")).toContainEqual({
        attributes: { "pai.sandbox.termination": "exit" },
        value: 1,
      });
      const acquired = otel.points("pai.capability.acquire.duration");
      expect(acquired.map((point) => point.attributes)).toEqual([
        { "pai.capability.name": "sandbox", "pai.capability.source": "warm" },
      ]);
      const poolAttributes = { "pai.capability.name": "sandbox", "pai.pool.id": poolId };
      expect(otel.points("pai.pool.borrowed")).toEqual([{ attributes: poolAttributes, value: 1 }]);
      expect(otel.points("pai.pool.size")[0]?.value).toBeGreaterThanOrEqual(1);
      expect(otel.points("pai.pool.pending")).toEqual([{ attributes: poolAttributes, value: 0 }]);
      expect(otel.points("pai.pool.hibernated")).toEqual([{ attributes: poolAttributes, value: 0 }]);
      expect(
        otel.points("pai.pool.creates").reduce((sum, point) => sum + Number(point.value), 0),
      ).toBeGreaterThanOrEqual(1);
    } finally {
      await runtime.close();
    }
  });
});
