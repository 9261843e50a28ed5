// PAI's OpenTelemetry spans and metrics, read with the official SDK, for scripted runs whose tools use a real
// sandbox on the real engine: the span tree (pai.run > the AI SDK's spans > pai.tool > pai.capability.acquire,
// pai.sandbox.*), its attributes, a failing tool's error code, and the metrics the run moved; a sandbox woken from
// hibernation, one reattached by the next process and one that process's other spec replaced, as
// `pai.capability.acquire` says where they came from; the
// egress metrics of an allowed and a refused connection.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SpanStatusCode } from "@opentelemetry/api";
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import {
  createAgentRuntime,
  createMemoryThreadStore,
  createPai,
  createSqliteThreadStore,
  defineAgent,
  defineTool,
} from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { type DockerSandboxOptions, dockerSandbox, sandbox } from "@pai/sandbox";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type InstalledOtel, installOtel, parentIdOf } from "../fixtures/otel-sdk.ts";
import {
  dockerOptedOut,
  poolContainers,
  removePoolContainers,
  sandboxImage,
  uniquePoolId,
  waitFor,
} from "./docker-helpers.ts";
import { startEgressServers } from "./fixtures/egress-servers.ts";
import { coderPai, commandModel, outputsOf } from "./fixtures/run-script.ts";

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
/** Every pool the tests made: none may keep a container. */
const poolIds = [poolId];
let otel: InstalledOtel;

// A provider per test: each test reads only its own spans and metrics.
beforeEach(() => {
  otel = installOtel();
});
afterEach(async () => {
  await otel.uninstall();
});
afterAll(async () => {
  try {
    for (const id of poolIds) expect(await poolContainers(id)).toEqual([]);
  } finally {
    for (const id of poolIds) await removePoolContainers(id);
  }
});

/** A pool id of its own for a test, named after `name`, whose containers the file's cleanup checks. */
function testPoolId(name: string): string {
  const id = uniquePoolId(name);
  poolIds.push(id);
  return id;
}

/** A sandbox binding on a pool of its own (see {@link testPoolId}). */
function sandboxBinding(name: string, options: Omit<DockerSandboxOptions, "image" | "poolId"> = {}) {
  return dockerSandbox({ image: sandboxImage, poolId: testPoolId(name), ...options });
}

/** A runtime of the `coder` agent, whose model runs each message as a command in the thread's sandbox. */
function coderRuntime(options: {
  sandbox: ReturnType<typeof dockerSandbox>;
  store?: ReturnType<typeof createSqliteThreadStore>;
}) {
  return createAgentRuntime({
    pai: coderPai,
    store: options.store ?? createMemoryThreadStore(),
    model: commandModel(),
    capabilities: { sandbox: options.sandbox },
  });
}

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

  /** The one `pai.capability.acquire` span collected, checked to be a child of the one `pai.tool` span. */
  function onlyAcquireUnderTool() {
    const [tool] = otel.named("pai.tool");
    const acquires = otel.named("pai.capability.acquire");
    expect(acquires).toHaveLength(1);
    expect(parentIdOf(acquires[0]!)).toBe(tool!.spanContext().spanId);
    return acquires[0]!;
  }

  it("traces a hibernated thread sandbox woken by the next call as an acquire with source woken under that call", async () => {
    const binding = sandboxBinding("telemetry-wake", { pool: { min: 0, max: 1, hibernateAfterMs: 300 } });
    const runtime = coderRuntime({ sandbox: binding });
    try {
      const first = await (await runtime.run({ agentId: "coder", message: "echo kept > note.txt" })).done;
      expect(first.status).toBe("completed");
      await waitFor(() => binding.metrics()?.hibernated === 1, "the sandbox to hibernate");
      otel.exporter.reset();

      const second = await (
        await runtime.run({ agentId: "coder", threadId: first.threadId, message: "cat note.txt" })
      ).done;
      expect(outputsOf(second.messages).at(-1)).toMatchObject({ exitCode: 0, stdout: "kept\n" });
      await otel.collect();
      const acquire = onlyAcquireUnderTool();
      expect(acquire.attributes).toMatchObject({
        "pai.capability.name": "sandbox",
        "pai.capability.lifetime": "thread",
        "pai.capability.source": "woken",
        "pai.capability.resource_id": runtime.leases()[0]?.resourceId,
      });
      expect(acquire.attributes["pai.capability.wait_ms"]).toBeGreaterThan(0);
      expect(otel.points("pai.capability.wake.duration")).toEqual([
        {
          attributes: { "pai.capability.name": "sandbox" },
          value: expect.objectContaining({
            count: 1,
            sum: acquire.attributes["pai.capability.wait_ms"],
          }),
        },
      ]);
    } finally {
      await runtime.close();
    }
  });

  /**
   * Two processes' runtimes on one SQLite file, each with its sandbox binding: the first writes a note in a thread's
   * sandbox and hands its leases over as it closes; the next reads the note in the same thread. Resolves to the first
   * process's container and the next one's, with only the next process's spans and metrics recorded.
   */
  async function handOverThread(
    firstSandbox: ReturnType<typeof dockerSandbox>,
    nextSandbox: ReturnType<typeof dockerSandbox>,
  ): Promise<{ before: string | undefined; after: string | undefined }> {
    const dir = mkdtempSync(join(tmpdir(), "pai-telemetry-handover-"));
    const path = join(dir, "threads.db");
    const first = coderRuntime({ sandbox: firstSandbox, store: createSqliteThreadStore({ path }) });
    const next = coderRuntime({ sandbox: nextSandbox, store: createSqliteThreadStore({ path }) });
    try {
      const written = await (await first.run({ agentId: "coder", message: "echo kept > note.txt" })).done;
      expect(written.status).toBe("completed");
      const before = first.leases()[0]?.resourceId;
      await first.close({ handOver: true });
      otel.exporter.reset();

      const read = await (
        await next.run({ agentId: "coder", threadId: written.threadId, message: "cat note.txt" })
      ).done;
      expect(outputsOf(read.messages).at(-1)).toMatchObject({ exitCode: 0, stdout: "kept\n" });
      const after = next.leases()[0]?.resourceId;
      await otel.collect();
      return { before, after };
    } finally {
      await first.close();
      await next.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it("traces the sandbox the next process reattaches as an acquire with source reattached", async () => {
    // The same spec and pool in both processes, as after a deploy that changed nothing of the sandbox.
    const options = {
      image: sandboxImage,
      poolId: testPoolId("telemetry-reattach"),
      pool: { min: 0, max: 1 },
    };
    const { before, after } = await handOverThread(dockerSandbox(options), dockerSandbox(options));
    expect(after).toBe(before);
    expect(onlyAcquireUnderTool().attributes).toMatchObject({
      "pai.capability.name": "sandbox",
      "pai.capability.lifetime": "thread",
      "pai.capability.source": "reattached",
      "pai.capability.resource_id": before,
    });
    const reattached = otel
      .points("pai.capability.acquire.duration")
      .filter((point) => point.attributes["pai.capability.source"] === "reattached");
    expect(reattached).toEqual([
      {
        attributes: { "pai.capability.name": "sandbox", "pai.capability.source": "reattached" },
        value: expect.objectContaining({ count: 1 }),
      },
    ]);
  });

  it("traces a recorded sandbox that another spec replaced, its files carried over, as a new container marked replaced", async () => {
    // A deploy that changed the sandbox: the next process's pool is another, so its container cannot be adopted.
    const { before, after } = await handOverThread(
      sandboxBinding("telemetry-replace-old", { pool: { min: 0, max: 1 } }),
      sandboxBinding("telemetry-replace-new", { pool: { min: 0, max: 1 } }),
    );
    expect(after).not.toBe(before);
    expect(onlyAcquireUnderTool().attributes).toMatchObject({
      "pai.capability.name": "sandbox",
      "pai.capability.lifetime": "thread",
      "pai.capability.source": "cold",
      "pai.capability.replaced": true,
      "pai.capability.resource_id": after,
    });
    expect(
      otel
        .points("pai.capability.acquire.duration")
        .map((point) => point.attributes["pai.capability.source"]),
    ).toEqual(["cold"]);
  });

  it("counts the egress bytes of an allowed connection and the refusal of another", async () => {
    const servers = await startEgressServers();
    const refusedPort = Number(servers.web.split(":")[1]) + 1;
    const runtime = coderRuntime({
      sandbox: sandboxBinding("telemetry-egress", {
        pool: { min: 0, max: 1 },
        network: { allow: [servers.web] },
      }),
    });
    try {
      const result = await (
        await runtime.run({
          agentId: "coder",
          message: `curl -sS http://${servers.web}/hello; curl -sS --fail-with-body http://127.0.0.1:${refusedPort}/`,
        })
      ).done;
      const [output] = outputsOf(result.messages);
      expect(output?.stdout).toContain("hello from the host\n");
      expect(output?.stdout).toContain(`pai egress: 127.0.0.1:${refusedPort} refused`);
      // A connection is counted when it ends, which the host may learn just after the command's end.
      const pointOf = (name: string, direction?: string) =>
        otel.points(name).find((point) => point.attributes["pai.egress.direction"] === direction);
      await waitFor(async () => {
        await otel.collect();
        return (
          pointOf("pai.egress.refusals") !== undefined && pointOf("pai.egress.bytes", "down") !== undefined
        );
      }, "both connections to be counted");
      const sandboxOnly = { "pai.capability.name": "sandbox" };
      expect(otel.points("pai.egress.refusals")).toEqual([{ attributes: sandboxOnly, value: 1 }]);
      const bytes = otel.points("pai.egress.bytes");
      const up = pointOf("pai.egress.bytes", "up");
      const down = pointOf("pai.egress.bytes", "down");
      expect(bytes).toHaveLength(2);
      expect(up?.attributes).toEqual({ ...sandboxOnly, "pai.egress.direction": "up" });
      // The request's line and headers up, the answer's headers and body down.
      expect(up?.value).toBeGreaterThan(`GET /hello HTTP/1.1\r\nHost: ${servers.web}\r\n\r\n`.length);
      expect(down?.value).toBeGreaterThan("hello from the host\n".length);
    } finally {
      await runtime.close();
      await servers.close();
    }
  });
});
