// A stop sent to one runtime for a run another runtime executes, both on one store (a SQLite file, a Postgres
// schema): two runtimes with their own owner ids and their own store connections, the stop through the second's HTTP
// handler, the run ending in the first exactly as a local stop ends it.
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AgentRuntime,
  type CapabilityBinding,
  createAgentRuntime,
  createPai,
  createPaiHandler,
  createSqliteThreadStore,
  defineAgent,
  defineCapability,
  defineTool,
  type ThreadStore,
  toolEndOf,
} from "@pai/core";
import { createPostgresThreadStore } from "@pai/core/postgres";
import { createScriptedModel } from "@pai/core/testing";
import type { UIMessage, UIMessageChunk } from "ai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { readChunks } from "./fixtures/read-chunks.ts";
import { createTestSchema } from "./fixtures/test-postgres.ts";

/** A `run`-lifetime resource whose provisioning and release each runtime logs (a sandbox's stand-in). */
const scratch = defineCapability<"scratch", Scratch>({
  name: "scratch",
  defaultLifetime: "run",
  members: { id: true },
});

interface Scratch {
  id(): Promise<string>;
}

interface ScratchLog {
  provisioned: string[];
  released: string[];
}

function scratchBinding(log: ScratchLog): CapabilityBinding<Scratch> {
  return {
    kind: "pai.capability-binding",
    capability: "scratch",
    async provision(request) {
      log.provisioned.push(request.leaseKey);
      return {
        facade: { id: async () => request.leaseKey },
        resourceId: request.leaseKey,
        release: async () => void log.released.push(request.leaseKey),
      };
    },
    async close() {},
  };
}

/**
 * Threads whose tool is awaited, by thread id: resolved once the tool holds its scratch resource. Set before the run
 * starts (its tool may run before `run` returns).
 */
const executing = new Map<string, () => void>();

const waitForStop = defineTool({
  id: "waitForStop",
  description: "Takes a scratch resource, then runs until the run is stopped",
  inputSchema: z.object({}),
  capabilities: { scratch },
  execute: async (ctx) => {
    await ctx.capabilities.scratch.id();
    executing.get(ctx.thread.threadId)?.();
    return new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)));
  },
});

const identities: Record<string, { userId: string }> = { alice: { userId: "alice" }, bob: { userId: "bob" } };
const pai = createPai({
  agents: { a: defineAgent({ identity: z.object({ userId: z.string() }), tools: { waitForStop } }) },
});

/** Calls the tool on a new message, answers with text once the tool ended. */
function waitingModel() {
  return createScriptedModel({
    steps: [],
    fallback: (call) =>
      call.prompt.at(-1)?.role === "tool"
        ? { text: "stopped" }
        : { toolCalls: [{ toolName: "waitForStop", input: {}, toolCallId: "c1" }] },
  });
}

interface Owner {
  runtime: AgentRuntime;
  scratch: ScratchLog;
  /** The runtime's HTTP interface; the caller is the `x-user` header's identity. */
  call(path: string, init?: RequestInit & { user?: string }): Promise<Response>;
}

const opened: AgentRuntime[] = [];

function owner(store: ThreadStore, ownerId: string): Owner {
  const log: ScratchLog = { provisioned: [], released: [] };
  const runtime = createAgentRuntime({
    pai,
    store,
    model: waitingModel(),
    ownerId,
    capabilities: { scratch: scratchBinding(log) },
  });
  opened.push(runtime);
  const handler = createPaiHandler({
    runtime,
    authenticate: (request) => identities[request.headers.get("x-user") ?? ""],
  });
  return {
    runtime,
    scratch: log,
    call: (path, { user = "alice", ...init } = {}) =>
      handler(new Request(`http://pai.test/api${path}`, { ...init, headers: { "x-user": user } })),
  };
}

/** Starts a run on `on` and resolves once its tool executes (holding its scratch resource). */
async function startWaitingRun(on: Owner) {
  let reached!: () => void;
  const reachedTool = new Promise<void>((resolve) => {
    reached = resolve;
  });
  const threadId = randomUUID();
  executing.set(threadId, reached);
  const run = await on.runtime.run({ agentId: "a", threadId, identity: identities.alice, message: "wait" });
  // A's own client reads the stream from the start (a replay), as a browser connected to A would.
  const ownStream = collect(on.runtime.activeRun(run.threadId)!.stream());
  await reachedTool;
  return { run, ownStream };
}

async function collect(stream: ReadableStream<UIMessageChunk>): Promise<UIMessageChunk[]> {
  const chunks: UIMessageChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

function toolParts(messages: UIMessage[]): Array<Record<string, unknown>> {
  return messages
    .flatMap((message) => message.parts as Array<Record<string, unknown>>)
    .filter((part) => typeof part.type === "string" && part.type.startsWith("tool-"));
}

/** The run as it ended, without what differs between two runs (ids, times, resource ids). */
function endingOf(messages: UIMessage[], chunks: UIMessageChunk[]) {
  return {
    roles: messages.map((message) => message.role),
    replyParts: messages.at(-1)!.parts.map((part) => {
      const { type, state, errorText } = part as Record<string, unknown>;
      return { type, state, errorText, end: toolEndOf(part) };
    }),
    // From the stop on (what comes before interleaves capability events with the model's stream).
    endingChunks: chunks
      .slice(chunks.findIndex((chunk) => chunk.type === "abort"))
      .map((chunk) => chunk.type),
  };
}

const shared: Array<{ name: string; create(): { open(): Promise<ThreadStore>; drop(): Promise<void> } }> = [
  {
    name: "a SQLite file",
    create: () => {
      const dir = mkdtempSync(join(tmpdir(), "pai-cross-stop-"));
      return {
        open: async () => createSqliteThreadStore({ path: join(dir, "threads.db") }),
        drop: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
  {
    name: "a Postgres schema",
    create: () => {
      const schema = createTestSchema();
      return {
        open: () =>
          createPostgresThreadStore({ connectionString: schema.connectionString, schema: schema.name }),
        drop: schema.drop,
      };
    },
  },
];

describe.each(shared)("a stop sent to another runtime on $name", ({ create }) => {
  let store: ReturnType<(typeof shared)[number]["create"]>;

  beforeEach(() => {
    store = create();
  });

  afterEach(async () => {
    try {
      await Promise.all(opened.splice(0).map((runtime) => runtime.close()));
    } finally {
      await store.drop();
    }
  });

  it("is recorded for the run's live owner, which cancels it as a local stop would: stream ended, thread whole, resource released", async () => {
    const a = owner(await store.open(), "owner-a");
    const b = owner(await store.open(), "owner-b");
    const { run, ownStream } = await startWaitingRun(a);
    expect(b.runtime.activeRun(run.threadId)).toBeUndefined();
    const followed = readChunks(await b.call(`/chat/${run.threadId}/stream`));

    expect((await b.call(`/chat/${run.threadId}/stop`, { method: "POST", user: "bob" })).status).toBe(404);
    const stop = await b.call(`/chat/${run.threadId}/stop`, { method: "POST" });

    expect(stop.status).toBe(200);
    expect(await stop.json()).toEqual({
      stopped: true,
      runId: run.runId,
      where: "remote",
      status: "running",
    });
    const result = await run.done;
    expect(result.status).toBe("cancelled");
    const [aChunks, bChunks] = await Promise.all([ownStream, followed]);
    expect(bChunks).toEqual(aChunks);
    expect(aChunks.at(-1)).toMatchObject({
      type: "tool-output-error",
      toolMetadata: { paiToolId: "waitForStop", paiEnd: { reason: "cancelled" } },
    });

    const stored = await a.runtime.store.loadMessages(run.threadId);
    expect(stored).toEqual(result.messages);
    expect((await b.runtime.store.getRun(run.runId))?.status).toBe("cancelled");
    expect(toolParts(stored).map((part) => [part.state, toolEndOf(part)])).toEqual([
      ["output-error", { reason: "cancelled" }],
    ]);
    expect(a.scratch.released).toEqual(a.scratch.provisioned);
    expect(a.scratch.provisioned).toHaveLength(1);
    expect(await b.runtime.store.listLeases({ lifetime: "run" })).toEqual([]);
    expect(b.scratch.provisioned).toEqual([]);

    // The same run stopped where it runs ends the same way.
    const local = await startWaitingRun(a);
    expect(await (await a.call(`/runs/${local.run.runId}/stop`, { method: "POST" })).json()).toEqual({
      stopped: true,
      runId: local.run.runId,
      where: "local",
      status: "running",
    });
    const localResult = await local.run.done;
    expect(localResult.status).toBe("cancelled");
    const localEnding = endingOf(localResult.messages, await local.ownStream);
    expect(localEnding.endingChunks).toEqual(["abort", "tool-output-error"]);
    expect(endingOf(stored, aChunks)).toEqual(localEnding);
  });

  it("answers stopped: false for a run that has ended, and for a thread with no run in progress", async () => {
    const a = owner(await store.open(), "owner-a");
    const b = owner(await store.open(), "owner-b");
    const { run, ownStream } = await startWaitingRun(a);
    run.cancel();
    await run.done;
    await ownStream;

    expect(await (await b.call(`/runs/${run.runId}/stop`, { method: "POST" })).json()).toEqual({
      stopped: false,
      runId: run.runId,
      status: "cancelled",
    });
    expect(await (await b.call(`/chat/${run.threadId}/stop`, { method: "POST" })).json()).toEqual({
      stopped: false,
      runId: null,
    });
    expect((await b.call("/runs/no-such-run/stop", { method: "POST" })).status).toBe(404);
    expect(await b.runtime.store.listRunStopRequests([run.runId])).toEqual([]);
  });

  it("ends a dead owner's run as interrupted at once and says it was not running", async () => {
    const b = owner(await store.open(), "owner-b");
    const long = Date.now() - 60_000;
    const gone = { ownerId: "owner-gone", host: "h", pid: 1, startedAt: long, heartbeatAt: long };
    await b.runtime.store.heartbeatOwner(gone);
    const now = Date.now();
    await b.runtime.store.commitRun({
      thread: {
        id: "t-dead",
        agentId: "a",
        ownerKey: b.runtime.identityKey(identities.alice),
        createdAt: now,
        updatedAt: now,
      },
      messages: [
        { id: "m1", role: "user", parts: [{ type: "text", text: "wait" }] },
        {
          id: "m2",
          role: "assistant",
          parts: [{ type: "tool-waitForStop", toolCallId: "c1", state: "input-available", input: {} }],
        },
      ],
      run: {
        id: "r-dead",
        threadId: "t-dead",
        agentId: "a",
        status: "running",
        startedAt: long,
        ownerId: "owner-gone",
      },
    });

    expect(await (await b.call("/chat/t-dead/stop", { method: "POST" })).json()).toEqual({
      stopped: false,
      runId: "r-dead",
      status: "interrupted",
    });
    expect((await b.runtime.store.getRun("r-dead"))?.status).toBe("interrupted");
    const parts = toolParts(await b.runtime.store.loadMessages("t-dead"));
    expect(parts.map((part) => [part.state, toolEndOf(part)])).toEqual([
      ["output-error", { reason: "interrupted" }],
    ]);
  });
});
