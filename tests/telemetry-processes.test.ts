// A run suspended in one process and resumed in another, on one shared store (a SQLite file, a Postgres schema): the
// resumed run's span links to the span of the run that suspended (the trace context is stored with the pending
// action), and the pending action is an event of the suspending run's span. A process killed with a lease: the
// process that takes the lease over traces it as an acquire of its own.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAgentRuntime, createPai, defineAgent, defineTool } from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { execa } from "execa";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { counter, fileCounterBinding } from "./fixtures/file-counter-binding.ts";
import { installOtel, parentIdOf } from "./fixtures/otel-sdk.ts";
import { createRuntimeProcesses, type SharedStore, sharedStores } from "./fixtures/runtime-process.ts";

const fixture = join(import.meta.dirname, "fixtures", "telemetry-process.ts");

/** A runtime of this process on the counter engine of the runtime processes (no run needs to use it). */
const counterPai = createPai({
  agents: {
    counting: defineAgent({
      tools: {
        count: defineTool({
          id: "count",
          description: "Counts up in this conversation's counter",
          inputSchema: z.object({}),
          capabilities: { counter },
          execute: async (ctx) => ({ value: await ctx.capabilities.counter.next() }),
        }),
      },
    }),
  },
});

interface ProcessSpans {
  status: string;
  spans: Array<{
    name: string;
    traceId: string;
    spanId: string;
    attributes: Record<string, unknown>;
    events: Array<{ name: string; attributes?: Record<string, unknown> }>;
    links: Array<{ traceId: string; spanId: string; attributes?: Record<string, unknown> }>;
  }>;
  points: Record<string, Array<{ attributes: Record<string, unknown>; value: unknown }>>;
}

describe.each(sharedStores)("telemetry across processes on $name", ({ create }) => {
  let dir: string;
  let store: SharedStore;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "pai-telemetry-"));
    store = create(dir);
  });
  afterEach(async () => {
    try {
      await store.drop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  /** Runs the fixture in a process of its own on the shared store and reads what it printed. */
  async function inProcess(mode: "suspend" | "resume"): Promise<ProcessSpans> {
    const { stdout } = await execa(process.execPath, [fixture, store.spec, mode], { timeout: 30_000 });
    return JSON.parse(stdout.trim().split("\n").at(-1)!) as ProcessSpans;
  }

  it("links the run resumed in a second process to the run that suspended", async () => {
    const first = await inProcess("suspend");
    expect(first.status).toBe("suspended");
    const suspending = first.spans.filter((span) => span.name === "pai.run");
    expect(suspending).toHaveLength(1);
    expect(suspending[0]!.attributes).toMatchObject({
      "pai.run.status": "suspended",
      "pai.run.kind": "message",
    });
    const [event] = suspending[0]!.events.filter((candidate) => candidate.name === "pai.pending_action");
    expect(event?.attributes).toMatchObject({
      "pai.pending_action.kind": "suspend",
      "pai.tool.id": "deploy",
      "pai.tool.call_id": "d1",
    });
    const waiting = first.spans.find((span) => span.name === "pai.tool");
    expect(waiting?.attributes["pai.tool.outcome"]).toBe("waiting");
    expect(first.points["pai.pending_actions.open"]).toEqual([{ attributes: {}, value: 1 }]);

    const second = await inProcess("resume");
    expect(second.status).toBe("completed");
    const resumed = second.spans.filter((span) => span.name === "pai.run");
    expect(resumed).toHaveLength(1);
    expect(resumed[0]!.attributes).toMatchObject({
      "pai.run.status": "completed",
      "pai.run.kind": "continuation",
    });
    expect(resumed[0]!.links).toEqual([
      {
        traceId: suspending[0]!.traceId,
        spanId: suspending[0]!.spanId,
        attributes: { "pai.pending_action.id": event!.attributes!["pai.pending_action.id"] },
      },
    ]);
    // A new trace: the link, not a parent, ties the two runs together.
    expect(resumed[0]!.traceId).not.toBe(suspending[0]!.traceId);
    const tool = second.spans.find((span) => span.name === "pai.tool");
    expect(tool?.attributes).toMatchObject({ "pai.tool.entry": "resume", "pai.tool.outcome": "output" });
    expect(second.points["pai.pending_actions.open"]).toEqual([{ attributes: {}, value: -1 }]);
    expect(second.points["pai.runs"]).toEqual([
      { attributes: { "pai.run.status": "completed", "pai.agent.id": "ops" }, value: 1 },
    ]);
  });

  it("traces a killed process's lease, taken over by the next process, as an acquire of its own trace", async () => {
    const engineDir = join(dir, "engine");
    mkdirSync(engineDir);
    const processes = createRuntimeProcesses({ store: () => store, engineDir: () => engineDir });
    const otel = installOtel();
    try {
      const dying = await processes.start("dying");
      expect(await dying.run("t1")).toMatchObject({ status: "completed", value: 1 });
      await dying.kill();
      const opened = await store.open();
      const [record] = await opened.listLeases({ capability: "counter" });
      await opened.close();
      expect(record).toMatchObject({ ownerId: "dying", lifetime: "thread" });

      const runtime = createAgentRuntime({
        pai: counterPai,
        store: await store.open(),
        model: createScriptedModel({ steps: [] }),
        capabilities: { counter: fileCounterBinding(engineDir) },
      });
      try {
        await runtime.startCapabilities();
        await runtime.sweep();
        expect(runtime.leases().map((lease) => lease.resourceId)).toEqual([record!.resourceId]);
        const [acquire, ...others] = otel.named("pai.capability.acquire");
        expect(others).toEqual([]);
        // No run asked for it: a trace of its own.
        expect(parentIdOf(acquire!)).toBeUndefined();
        expect(acquire!.attributes).toEqual({
          "pai.capability.name": "counter",
          "pai.capability.lifetime": "thread",
          "pai.capability.taken_over": true,
          "pai.capability.source": "reattached",
          "pai.capability.resource_id": record!.resourceId,
        });
        await otel.collect();
        expect(otel.points("pai.capability.acquire.duration")).toEqual([
          {
            attributes: { "pai.capability.name": "counter", "pai.capability.source": "reattached" },
            value: expect.objectContaining({ count: 1 }),
          },
        ]);
      } finally {
        await runtime.close();
      }
    } finally {
      processes.stopAll();
      await otel.uninstall();
    }
  });
});
