import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { UIMessage } from "ai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestSchema } from "../../../tests/fixtures/test-postgres.ts";
import { PaiError } from "../errors/pai-error.ts";
import { createMemoryThreadStore } from "./memory-thread-store.ts";
import { createPostgresThreadStore } from "./postgres/postgres-thread-store.ts";
import { createSqliteThreadStore } from "./sqlite-thread-store.ts";
import type {
  CheckpointRecord,
  LeaseRecord,
  PendingActionRecord,
  RunRecord,
  RunRewind,
  ThreadRecord,
  ThreadStore,
  ToolDataRecord,
} from "./thread-store.ts";

interface StoreFixture {
  store: ThreadStore;
  cleanup(): Promise<void>;
}

const implementations: Array<{ name: "memory" | "sqlite" | "postgres"; create(): Promise<StoreFixture> }> = [
  { name: "memory", create: async () => ({ store: createMemoryThreadStore(), cleanup: async () => {} }) },
  {
    name: "sqlite",
    create: async () => {
      const directory = mkdtempSync(join(tmpdir(), "pai-thread-store-"));
      return {
        store: createSqliteThreadStore({ path: join(directory, "threads.db") }),
        cleanup: async () => rmSync(directory, { recursive: true, force: true }),
      };
    },
  },
  {
    // A real PostgreSQL server (scripts/postgres starts one when none answers), a new schema per test.
    name: "postgres",
    create: async () => {
      const schema = createTestSchema();
      return {
        store: await createPostgresThreadStore({
          connectionString: schema.connectionString,
          schema: schema.name,
        }),
        cleanup: schema.drop,
      };
    },
  },
];

function thread(overrides: Partial<ThreadRecord> = {}): ThreadRecord {
  return { id: "t1", agentId: "coder", ownerKey: "user:1", createdAt: 1000, updatedAt: 1000, ...overrides };
}

function run(overrides: Partial<RunRecord> = {}): RunRecord {
  return { id: "r1", threadId: "t1", agentId: "coder", status: "running", startedAt: 1000, ...overrides };
}

function toolData(overrides: Partial<Omit<ToolDataRecord, "seq">> = {}): Omit<ToolDataRecord, "seq"> {
  return {
    threadId: "t1",
    runId: "r1",
    toolCallId: "call-1",
    toolId: "search",
    channel: "progress",
    data: { done: 1 },
    createdAt: 1000,
    ...overrides,
  };
}

function action(overrides: Partial<PendingActionRecord> = {}): PendingActionRecord {
  return {
    id: "a1",
    threadId: "t1",
    runId: "r1",
    toolCallId: "call-1",
    toolId: "deploy",
    toolName: "deploy",
    inputHash: "hash-1",
    input: { target: "prod" },
    kind: "suspend",
    name: "approve",
    payload: { question: "Deploy?" },
    suspendHistory: [],
    status: "pending",
    createdAt: 1000,
    ...overrides,
  };
}

function lease(overrides: Partial<LeaseRecord> = {}): LeaseRecord {
  return {
    capability: "sandbox",
    lifetime: "thread",
    key: "t1",
    resourceId: "container-1",
    meta: { image: "pai/sandbox" },
    createdAt: 1000,
    lastUsedAt: 1000,
    ...overrides,
  };
}

function checkpoint(overrides: Partial<CheckpointRecord> = {}): CheckpointRecord {
  return {
    id: "k1",
    threadId: "t1",
    messageId: "m2",
    capability: "sandbox",
    manifestDigest: "0123456789abcdef".repeat(4),
    files: 3,
    totalBytes: 4096,
    bytesAdded: 512,
    createdAt: 1000,
    ...overrides,
  };
}

const conversation: UIMessage[] = [
  { id: "m1", role: "user", parts: [{ type: "text", text: "Run the tests" }] },
  {
    id: "m2",
    role: "assistant",
    metadata: { runId: "r1" },
    parts: [
      { type: "step-start" },
      {
        type: "tool-runCommand",
        toolCallId: "call-1",
        state: "output-available",
        input: { command: "npm", args: ["test"] },
        output: { exitCode: 0, stdout: "ok\n" },
      },
      { type: "data-toolData", id: "d1", data: { channel: "progress", value: 1 } },
      { type: "text", text: "All green.", state: "done" },
    ],
  },
];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function eventually(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function expectCode(promise: Promise<unknown>, code: PaiError["code"]): Promise<PaiError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(PaiError.hasCode(error, code), `expected PaiError ${code}, got ${String(error)}`).toBe(true);
  return error as PaiError;
}

describe.each(implementations)("ThreadStore contract ($name)", ({ name, create }) => {
  let store: ThreadStore;
  let cleanup: () => Promise<void>;

  beforeEach(async () => {
    ({ store, cleanup } = await create());
  });

  afterEach(async () => {
    try {
      await store.close();
    } finally {
      await cleanup();
    }
  });

  describe("threads", () => {
    it("creates a thread on ensureThread and returns it", async () => {
      const created = await store.ensureThread(thread({ title: "Tests" }));

      expect(created).toEqual(thread({ title: "Tests" }));
      expect(await store.getThread("t1")).toEqual(thread({ title: "Tests" }));
    });

    it("keeps the stored thread when ensureThread meets an existing one", async () => {
      await store.ensureThread(thread({ title: "First" }));

      const again = await store.ensureThread(thread({ title: "Second", updatedAt: 5000 }));

      expect(again).toEqual(thread({ title: "First" }));
    });

    it("renames a thread and clears its title, keeping when it was last updated", async () => {
      await store.ensureThread(thread({ title: "Tests", updatedAt: 2000 }));

      expect(await store.setThreadTitle("t1", "Flaky tests")).toEqual(
        thread({ title: "Flaky tests", updatedAt: 2000 }),
      );
      expect(await store.getThread("t1")).toEqual(thread({ title: "Flaky tests", updatedAt: 2000 }));
      expect(await store.setThreadTitle("t1", undefined)).toEqual(thread({ updatedAt: 2000 }));
      expect(await store.getThread("t1")).toEqual(thread({ updatedAt: 2000 }));
    });

    it("renames nothing when the thread is missing, and refuses a title that is not a string", async () => {
      expect(await store.setThreadTitle("missing", "Anything")).toBeUndefined();
      expect(await store.getThread("missing")).toBeUndefined();
      await store.ensureThread(thread({ title: "Tests" }));
      await expectCode(store.setThreadTitle("t1", 42 as unknown as string), "INVALID_ARGUMENT");
      expect((await store.getThread("t1"))!.title).toBe("Tests");
    });

    it("returns undefined for an unknown thread", async () => {
      expect(await store.getThread("missing")).toBeUndefined();
    });

    it("lists an owner's threads newest first, filtered by agent and limited", async () => {
      await store.ensureThread(thread({ id: "old", updatedAt: 1000 }));
      await store.ensureThread(thread({ id: "new", updatedAt: 3000 }));
      await store.ensureThread(thread({ id: "mid", agentId: "writer", updatedAt: 2000 }));
      await store.ensureThread(thread({ id: "other", ownerKey: "user:2", updatedAt: 9000 }));

      const ids = (threads: ThreadRecord[]) => threads.map((found) => found.id);
      expect(ids(await store.listThreads({ ownerKey: "user:1" }))).toEqual(["new", "mid", "old"]);
      expect(ids(await store.listThreads({ ownerKey: "user:1", agentId: "coder" }))).toEqual(["new", "old"]);
      expect(ids(await store.listThreads({ ownerKey: "user:1", limit: 2 }))).toEqual(["new", "mid"]);
      expect(await store.listThreads({ ownerKey: "user:1", limit: 0 })).toEqual([]);
      expect(await store.listThreads({ ownerKey: "nobody" })).toEqual([]);
    });

    it("moves a thread to the front of the list when a run commits on it", async () => {
      await store.ensureThread(thread({ id: "a", updatedAt: 1000 }));
      await store.ensureThread(thread({ id: "b", updatedAt: 2000 }));

      await store.commitRun({
        thread: thread({ id: "a", updatedAt: 3000 }),
        messages: [],
        run: run({ threadId: "a" }),
      });

      expect((await store.listThreads({ ownerKey: "user:1" })).map((found) => found.id)).toEqual(["a", "b"]);
    });

    it("rejects a negative limit and a thread without an id", async () => {
      await expectCode(store.listThreads({ ownerKey: "user:1", limit: -1 }), "INVALID_ARGUMENT");
      await expectCode(store.ensureThread(thread({ id: "" })), "INVALID_ARGUMENT");
      await expectCode(store.ensureThread({ ...thread(), agentId: undefined } as never), "INVALID_ARGUMENT");
    });

    it("deletes a thread with its messages, runs, tool data, pending actions and leases", async () => {
      await store.commitRun({ thread: thread(), messages: conversation, run: run() });
      await store.commitRun({
        thread: thread({ id: "t2" }),
        messages: conversation,
        run: run({ id: "r2", threadId: "t2" }),
      });
      await store.appendToolData(toolData());
      await store.appendToolData(toolData({ threadId: "t2", runId: "r2" }));
      await store.putPendingAction(action());
      await store.putPendingAction(action({ id: "a2", threadId: "t2", runId: "r2" }));
      await store.putLease(lease({ lifetime: "thread", key: "t1" }));
      await store.putLease(lease({ lifetime: "run", key: "r1" }));
      await store.putLease(lease({ lifetime: "thread", key: "t2" }));
      await store.putLease(lease({ lifetime: "user", key: "user:1" }));

      await store.deleteThread("t1");

      expect(await store.getThread("t1")).toBeUndefined();
      expect(await store.loadMessages("t1")).toEqual([]);
      expect(await store.getRun("r1")).toBeUndefined();
      expect(await store.listToolData({ threadId: "t1" })).toEqual([]);
      expect(await store.getPendingAction("a1")).toBeUndefined();
      expect((await store.listLeases()).map((kept) => `${kept.lifetime}:${kept.key}`)).toEqual([
        "thread:t2",
        "user:user:1",
      ]);
      expect(await store.loadMessages("t2")).toEqual(conversation);
      expect(await store.getRun("r2")).toBeDefined();
      expect(await store.listToolData({ threadId: "t2" })).toHaveLength(1);
      expect(await store.getPendingAction("a2")).toBeDefined();
    });

    it("treats deleting an unknown thread as done", async () => {
      await expect(store.deleteThread("missing")).resolves.toBeUndefined();
    });
  });

  describe("messages and commits", () => {
    it("returns no messages for a thread that has none", async () => {
      expect(await store.loadMessages("missing")).toEqual([]);
    });

    it("stores the messages, thread and run of a commit together", async () => {
      await store.commitRun({
        thread: thread({ updatedAt: 2000 }),
        messages: conversation,
        run: run({ status: "completed", endedAt: 2000 }),
      });

      expect(await store.loadMessages("t1")).toStrictEqual(conversation);
      expect(await store.getThread("t1")).toEqual(thread({ updatedAt: 2000 }));
      expect(await store.getRun("r1")).toEqual(run({ status: "completed", endedAt: 2000 }));
    });

    it("replaces the earlier messages on the next commit", async () => {
      await store.commitRun({ thread: thread(), messages: conversation, run: run() });

      await store.commitRun({ thread: thread(), messages: conversation.slice(0, 1), run: run({ id: "r2" }) });

      expect(await store.loadMessages("t1")).toEqual(conversation.slice(0, 1));
      expect((await store.listRuns("t1")).map((found) => found.id)).toEqual(["r1", "r2"]);
    });

    it("keeps the thread's creation time and title on commit: a rename during the run stands", async () => {
      await store.ensureThread(thread({ createdAt: 1000, title: "Old" }));
      await store.setThreadTitle("t1", "Renamed");

      await store.commitRun({
        thread: thread({ createdAt: 5000, updatedAt: 6000, title: "Old" }),
        messages: [],
        run: run(),
      });

      expect(await store.getThread("t1")).toEqual(
        thread({ createdAt: 1000, updatedAt: 6000, title: "Renamed" }),
      );
    });

    it("creates a missing thread with its title on commit", async () => {
      await store.commitRun({ thread: thread({ title: "First message" }), messages: [], run: run() });

      expect(await store.getThread("t1")).toEqual(thread({ title: "First message" }));
    });

    it("rejects a commit whose run belongs to another thread", async () => {
      await expectCode(
        store.commitRun({ thread: thread(), messages: [], run: run({ threadId: "t2" }) }),
        "INVALID_ARGUMENT",
      );
      expect(await store.getThread("t1")).toBeUndefined();
    });

    it("keeps earlier messages when a commit holds a value JSON cannot store", async () => {
      await store.commitRun({ thread: thread(), messages: conversation, run: run() });
      const bad = [
        { id: "m3", role: "user", parts: [{ type: "data-x", data: 1n }] },
      ] as unknown as UIMessage[];

      await expectCode(
        store.commitRun({ thread: thread(), messages: bad, run: run({ id: "r2" }) }),
        "INVALID_ARGUMENT",
      );

      expect(await store.loadMessages("t1")).toEqual(conversation);
      expect(await store.getRun("r2")).toBeUndefined();
    });

    it("hands out copies that callers cannot use to change stored state", async () => {
      const messages = structuredClone(conversation);
      await store.commitRun({ thread: thread(), messages, run: run() });
      messages[0]!.parts.push({ type: "text", text: "mutated input" });

      const loaded = await store.loadMessages("t1");
      loaded[0]!.parts.push({ type: "text", text: "mutated output" });
      const found = (await store.getThread("t1"))!;
      found.title = "mutated";

      expect(await store.loadMessages("t1")).toEqual(conversation);
      expect((await store.getThread("t1"))!.title).toBeUndefined();
    });
  });

  describe("runs", () => {
    it("creates, reads and lists runs in start order", async () => {
      await store.createRun(run({ id: "r2", startedAt: 2000 }));
      await store.createRun(run({ id: "r1", startedAt: 1000 }));
      await store.createRun(run({ id: "r3", threadId: "t2" }));

      expect(await store.getRun("r1")).toEqual(run({ id: "r1", startedAt: 1000 }));
      expect(await store.getRun("missing")).toBeUndefined();
      expect((await store.listRuns("t1")).map((found) => found.id)).toEqual(["r1", "r2"]);
    });

    it("keeps what a rewind or a fork did on its run, through a commit, a create and a patch", async () => {
      const rewind: RunRewind = {
        kind: "rewind",
        toMessageId: null,
        droppedCount: 3,
        stoppedProcesses: [{ pid: 12, command: "python3 -m http.server" }],
      };
      await store.commitRun({ thread: thread(), messages: [], run: run({ status: "completed", rewind }) });
      const fork: RunRewind = {
        kind: "fork",
        toMessageId: "m1",
        droppedCount: 0,
        forkedFrom: "t0",
        stoppedProcesses: [],
      };
      await store.createRun(run({ id: "r2", startedAt: 2000, rewind: fork }));
      await store.updateRun("r2", { status: "completed", endedAt: 2100 });

      expect(await store.listRuns("t1")).toEqual([
        run({ status: "completed", rewind }),
        run({ id: "r2", startedAt: 2000, status: "completed", endedAt: 2100, rewind: fork }),
      ]);
      await expectCode(
        store.createRun(run({ id: "r3", rewind: { ...fork, kind: "jump" as "fork" } })),
        "INVALID_ARGUMENT",
      );
    });

    it("refuses to create a run twice", async () => {
      await store.createRun(run());

      await expectCode(store.createRun(run({ status: "failed" })), "INVALID_ARGUMENT");
      expect((await store.getRun("r1"))!.status).toBe("running");
    });

    it("patches a run and clears optional fields given as undefined", async () => {
      await store.createRun(run());
      await store.updateRun("r1", { status: "failed", endedAt: 2000, error: "boom" });
      expect(await store.getRun("r1")).toEqual(run({ status: "failed", endedAt: 2000, error: "boom" }));

      await store.updateRun("r1", { status: "running", endedAt: undefined, error: undefined });

      expect(await store.getRun("r1")).toStrictEqual(run({ status: "running" }));
    });

    it("reports an update of an unknown run", async () => {
      await expectCode(store.updateRun("missing", { status: "completed" }), "UNKNOWN_RUN");
    });
  });

  describe("tool data", () => {
    it("assigns increasing seq numbers in write order", async () => {
      const first = await store.appendToolData(toolData({ data: { step: 1 } }));
      const second = await store.appendToolData(toolData({ data: { step: 2 } }));

      expect(first).toEqual({ ...toolData({ data: { step: 1 } }), seq: first.seq });
      expect(second.seq).toBeGreaterThan(first.seq);
      expect(await store.listToolData({ threadId: "t1" })).toEqual([first, second]);
    });

    it("filters tool data by call and channel", async () => {
      await store.appendToolData(toolData({ toolCallId: "call-1", channel: "progress" }));
      await store.appendToolData(toolData({ toolCallId: "call-1", channel: "log", data: "line" }));
      await store.appendToolData(toolData({ toolCallId: "call-2", channel: "progress", data: null }));
      await store.appendToolData(toolData({ threadId: "t2" }));

      const list = async (query: { toolCallId?: string; channel?: string }) =>
        (await store.listToolData({ threadId: "t1", ...query })).map((found) => [
          found.toolCallId,
          found.channel,
          found.data,
        ]);
      expect(await list({ toolCallId: "call-1" })).toEqual([
        ["call-1", "progress", { done: 1 }],
        ["call-1", "log", "line"],
      ]);
      expect(await list({ channel: "progress" })).toEqual([
        ["call-1", "progress", { done: 1 }],
        ["call-2", "progress", null],
      ]);
      expect(await list({ toolCallId: "call-2", channel: "log" })).toEqual([]);
    });

    it("rejects tool data JSON cannot store", async () => {
      const cyclic: Record<string, unknown> = {};
      cyclic.self = cyclic;

      await expectCode(store.appendToolData(toolData({ data: cyclic })), "INVALID_ARGUMENT");
      expect(await store.listToolData({ threadId: "t1" })).toEqual([]);
    });
  });

  describe("pending actions", () => {
    it("stores, replaces and lists pending actions by thread and status", async () => {
      await store.putPendingAction(action({ id: "a1", createdAt: 1000 }));
      await store.putPendingAction(action({ id: "a2", createdAt: 2000, status: "cancelled" }));
      await store.putPendingAction(
        action({ id: "a3", threadId: "t2", kind: "client", name: undefined, createdAt: 3000 }),
      );
      await store.putPendingAction(
        action({ id: "a1", createdAt: 1000, suspendHistory: [{ question: "Sure?" }] }),
      );

      expect(await store.getPendingAction("a1")).toEqual(action({ suspendHistory: [{ question: "Sure?" }] }));
      expect(await store.getPendingAction("missing")).toBeUndefined();
      const ids = (actions: PendingActionRecord[]) => actions.map((found) => found.id);
      expect(ids(await store.listPendingActions({ threadId: "t1" }))).toEqual(["a1", "a2"]);
      expect(ids(await store.listPendingActions({ status: "pending" }))).toEqual(["a1", "a3"]);
      expect(ids(await store.listPendingActions({ threadId: "t1", status: "cancelled" }))).toEqual(["a2"]);
      expect(ids(await store.listPendingActions({}))).toEqual(["a1", "a2", "a3"]);
    });

    it("settles a pending action only while it has the expected status", async () => {
      await store.putPendingAction(action());

      const first = await store.settlePendingAction("a1", "pending", {
        status: "succeeded",
        answer: { approved: true },
        settledAt: 2000,
      });
      const second = await store.settlePendingAction("a1", "pending", { status: "denied", settledAt: 3000 });

      const settled = action({ status: "succeeded", answer: { approved: true }, settledAt: 2000 });
      expect(first).toEqual({ changed: true, action: settled });
      expect(second).toEqual({ changed: false, action: settled });
      expect(await store.getPendingAction("a1")).toEqual(settled);
    });

    it("keeps the earlier answer when a settle patch leaves it out", async () => {
      await store.putPendingAction(action({ status: "resumed", answer: { resume: 1 } }));

      const result = await store.settlePendingAction("a1", "resumed", { status: "succeeded" });

      expect(result.action).toEqual(action({ status: "succeeded", answer: { resume: 1 } }));
    });

    it("lets exactly one run claim an answered action to apply it, and keeps the claim on later writes", async () => {
      await store.putPendingAction(action({ status: "resumed", answer: { type: "resume", resume: {} } }));

      const claims = await Promise.all([
        store.claimPendingAction("a1", "run-a"),
        store.claimPendingAction("a1", "run-b"),
      ]);

      expect(claims.filter(Boolean)).toHaveLength(1);
      const winner = claims[0] ? "run-a" : "run-b";
      expect((await store.getPendingAction("a1"))?.appliedBy).toBe(winner);
      expect(await store.claimPendingAction("a1", "run-c")).toBe(false);
      expect(await store.claimPendingAction("missing", "run-c")).toBe(false);
      await store.settlePendingAction("a1", "resumed", { status: "failed" });
      expect((await store.getPendingAction("a1"))?.appliedBy).toBe(winner);
      await expectCode(store.claimPendingAction("a1", ""), "INVALID_ARGUMENT");
    });

    it("keeps the inner call an action waits on and its top-level call's journal, through a settle", async () => {
      const nested = action({
        toolId: "codeMode",
        toolName: "code",
        inner: {
          path: ["code", "writer", "refund"],
          key: "2",
          toolId: "refund.v1",
          input: { orderId: "o-1", note: null },
        },
        journal: [
          {
            key: "0",
            toolId: "add",
            inputHash: "h0",
            state: "settled",
            outcome: { type: "output", output: { sum: 3 } },
          },
          {
            key: "1",
            toolId: "charge",
            inputHash: "h1",
            state: "settled",
            outcome: { type: "error", message: "Denied by the user", code: "DENIED" },
          },
          {
            key: "2",
            toolId: "agent:writer",
            inputHash: "h2",
            state: "waiting",
            name: "default",
            suspendHistory: [],
            subagent: { agentId: "writer", threadId: "t9", actionId: "a9" },
          },
          {
            key: "",
            toolId: "codeMode",
            inputHash: "h",
            state: "answered",
            answer: { type: "resume", resume: { approved: true } },
            name: "default",
            suspendHistory: [{ question: "Run it?" }],
          },
        ],
      });
      await store.putPendingAction(nested);
      expect(await store.getPendingAction("a1")).toEqual(nested);
      const settled = await store.settlePendingAction("a1", "pending", {
        status: "resumed",
        settledAt: 2000,
      });
      expect(settled.action).toEqual({ ...nested, status: "resumed", settledAt: 2000 });
      expect(await store.listPendingActions({ threadId: "t1" })).toEqual([settled.action]);
    });

    it("rejects a journal entry without a state and an inner call without a path", async () => {
      const entry = { key: "0", toolId: "add", inputHash: "h0", outcome: { type: "output", output: 1 } };
      await expectCode(store.putPendingAction(action({ journal: [entry as never] })), "INVALID_ARGUMENT");
      await expectCode(
        store.putPendingAction(action({ inner: { path: [], key: "0", toolId: "add", input: {} } })),
        "INVALID_ARGUMENT",
      );
      expect(await store.getPendingAction("a1")).toBeUndefined();
    });

    it("reports no change when settling an unknown action", async () => {
      expect(await store.settlePendingAction("missing", "pending", { status: "cancelled" })).toEqual({
        changed: false,
        action: undefined,
      });
    });
  });

  describe("leases", () => {
    it("stores, replaces, filters, touches and deletes leases", async () => {
      await store.putLease(lease({ key: "t1", createdAt: 1000 }));
      await store.putLease(lease({ key: "t2", createdAt: 2000 }));
      await store.putLease(
        lease({ capability: "browser", lifetime: "user", key: "user:1", createdAt: 3000 }),
      );
      await store.putLease(lease({ key: "t1", resourceId: "container-9", createdAt: 1000 }));

      const keys = (leases: LeaseRecord[]) => leases.map((found) => `${found.capability}/${found.key}`);
      expect(keys(await store.listLeases())).toEqual(["sandbox/t1", "sandbox/t2", "browser/user:1"]);
      expect(keys(await store.listLeases({ capability: "sandbox" }))).toEqual(["sandbox/t1", "sandbox/t2"]);
      expect(keys(await store.listLeases({ lifetime: "user" }))).toEqual(["browser/user:1"]);
      expect(await store.listLeases({ capability: "sandbox", lifetime: "thread", key: "t1" })).toEqual([
        lease({ key: "t1", resourceId: "container-9" }),
      ]);

      await store.touchLease("sandbox", "thread", "t1", 5000);
      await store.touchLease("sandbox", "thread", "missing", 5000);
      expect((await store.listLeases({ key: "t1" }))[0]!.lastUsedAt).toBe(5000);

      await store.deleteLease("sandbox", "thread", "t1");
      await store.deleteLease("sandbox", "thread", "missing");
      expect(keys(await store.listLeases())).toEqual(["sandbox/t2", "browser/user:1"]);
    });
  });

  describe("owners and lease ownership", () => {
    const owner = (ownerId: string, heartbeatAt: number) => ({
      ownerId,
      host: "host-a",
      pid: 42,
      startedAt: 1000,
      heartbeatAt,
    });

    it("records owners' heartbeats, updates them in place and forgets a removed owner", async () => {
      await store.heartbeatOwner(owner("a", 1000));
      await store.heartbeatOwner(owner("b", 1500));
      await store.heartbeatOwner(owner("a", 2000));
      expect(await store.listOwners()).toEqual([owner("a", 2000), owner("b", 1500)]);
      await store.removeOwner("a");
      await store.removeOwner("missing");
      expect(await store.listOwners()).toEqual([owner("b", 1500)]);
      await expectCode(store.heartbeatOwner({ ...owner("", 1), ownerId: "" }), "INVALID_ARGUMENT");
    });

    it("records where an owner's process runs (boot, pid namespace, start), updated with each heartbeat", async () => {
      const place = { bootId: "b00t-1", pidNamespace: "pid:[4026531836]", processStartTicks: 12_345_678_901 };
      await store.heartbeatOwner({ ...owner("a", 1000), ...place });
      await store.heartbeatOwner(owner("b", 1000));
      expect(await store.listOwners()).toEqual([{ ...owner("a", 1000), ...place }, owner("b", 1000)]);
      // A process restarted under the same owner id records its new place; one without a place clears it.
      await store.heartbeatOwner({ ...owner("a", 2000), ...place, processStartTicks: 99 });
      await store.heartbeatOwner({ ...owner("b", 2000), ...place });
      await store.heartbeatOwner(owner("a", 3000));
      expect(await store.listOwners()).toEqual([owner("a", 3000), { ...owner("b", 2000), ...place }]);
      await expectCode(store.heartbeatOwner({ ...owner("c", 1), processStartTicks: -1 }), "INVALID_ARGUMENT");
    });

    it("stores a lease's owner and lets exactly one compare-and-set claim it", async () => {
      await store.putLease(lease({ ownerId: "dead" }));
      expect((await store.listLeases())[0]!.ownerId).toBe("dead");

      const claims = await Promise.all([
        store.claimLease("sandbox", "thread", "t1", { from: "dead", to: "a" }),
        store.claimLease("sandbox", "thread", "t1", { from: "dead", to: "b" }),
      ]);
      expect(claims.filter(Boolean)).toHaveLength(1);
      const winner = claims[0] ? "a" : "b";
      expect((await store.listLeases())[0]!.ownerId).toBe(winner);
      expect(await store.claimLease("sandbox", "thread", "t1", { from: "dead", to: "c" })).toBe(false);
      expect(await store.claimLease("sandbox", "thread", "missing", { from: "dead", to: "c" })).toBe(false);
    });

    it("treats a lease recorded without an owner as claimable from undefined", async () => {
      await store.putLease(lease());
      expect((await store.listLeases())[0]!.ownerId).toBeUndefined();
      expect(await store.claimLease("sandbox", "thread", "t1", { from: "x", to: "a" })).toBe(false);
      expect(await store.claimLease("sandbox", "thread", "t1", { from: undefined, to: "a" })).toBe(true);
      expect((await store.listLeases())[0]!.ownerId).toBe("a");
    });

    it("records a handover request only against the current holder, and a claim clears it", async () => {
      await store.putLease(lease({ ownerId: "a" }));
      expect(await store.requestLeaseHandover("sandbox", "thread", "t1", { from: "z", to: "b" })).toBe(false);
      expect((await store.listLeases())[0]!.handoverTo).toBeUndefined();
      expect(await store.requestLeaseHandover("sandbox", "thread", "t1", { from: "a", to: "b" })).toBe(true);
      expect((await store.listLeases())[0]).toMatchObject({ ownerId: "a", handoverTo: "b" });
      expect(await store.claimLease("sandbox", "thread", "t1", { from: "a", to: "b" })).toBe(true);
      const [handedOver] = await store.listLeases();
      expect(handedOver).toMatchObject({ ownerId: "b" });
      expect(handedOver!.handoverTo).toBeUndefined();
    });

    it("stores a run's owner, lists runs by status and ends a run once by compare-and-set", async () => {
      await store.ensureThread(thread());
      await store.createRun(run({ id: "r1", ownerId: "a", startedAt: 1000 }));
      await store.createRun(run({ id: "r2", ownerId: "b", startedAt: 2000 }));
      await store.createRun(run({ id: "r3", status: "completed", startedAt: 3000 }));
      expect((await store.listRunsByStatus("running")).map((found) => found.id)).toEqual(["r1", "r2"]);
      expect((await store.getRun("r1"))?.ownerId).toBe("a");

      const ends = await Promise.all([
        store.settleRun("r1", "running", { status: "interrupted", endedAt: 5000, error: "gone" }),
        store.settleRun("r1", "running", { status: "interrupted", endedAt: 6000 }),
      ]);
      expect(ends.filter(Boolean)).toHaveLength(1);
      expect(await store.getRun("r1")).toMatchObject({ status: "interrupted", ownerId: "a" });
      expect(await store.settleRun("missing", "running", { status: "interrupted" })).toBe(false);
      expect((await store.listRunsByStatus("running")).map((found) => found.id)).toEqual(["r2"]);
      expect((await store.listRunsByStatus("interrupted")).map((found) => found.id)).toEqual(["r1"]);
      await expectCode(store.listRunsByStatus("lost" as never), "INVALID_ARGUMENT");
    });
  });

  describe("thread leases", () => {
    const request = (
      overrides: Partial<{ threadId: string; runId: string; ownerId: string; ttlMs: number }>,
    ) => ({
      threadId: "t1",
      runId: "r1",
      ownerId: "a",
      ttlMs: 60_000,
      ...overrides,
    });

    it("lets one run hold a thread, refusing every other (its own owner's too) until it releases it", async () => {
      const before = Date.now();
      const first = await store.acquireThreadLease(request({}));
      expect(first.acquired).toBe(true);
      expect(first.lease).toMatchObject({ threadId: "t1", runId: "r1", ownerId: "a" });
      expect(first.lease.expiresAt).toBeGreaterThanOrEqual(before + 59_000);

      const other = await store.acquireThreadLease(request({ runId: "r2", ownerId: "b" }));
      const same = await store.acquireThreadLease(request({ runId: "r3" }));
      expect(other).toEqual({ acquired: false, lease: first.lease });
      expect(same).toEqual({ acquired: false, lease: first.lease });
      expect(await store.getThreadLease("t1")).toEqual(first.lease);
      expect((await store.acquireThreadLease(request({ threadId: "t2", runId: "r4" }))).acquired).toBe(true);

      await store.releaseThreadLease("t1", "r2");
      expect(await store.getThreadLease("t1")).toEqual(first.lease);
      await store.releaseThreadLease("t1", "r1");
      expect(await store.getThreadLease("t1")).toBeUndefined();
      expect((await store.acquireThreadLease(request({ runId: "r2", ownerId: "b" }))).acquired).toBe(true);
    });

    it("gives exactly one of several processes taking a free thread at once the lease", async () => {
      const results = await Promise.all(
        ["a", "b", "c", "d"].map((ownerId) =>
          store.acquireThreadLease(request({ ownerId, runId: `r-${ownerId}` })),
        ),
      );

      expect(results.filter((result) => result.acquired)).toHaveLength(1);
      const holder = results.find((result) => result.acquired)!.lease;
      expect(results.map((result) => result.lease)).toEqual([holder, holder, holder, holder]);
    });

    it("lets a lapsed lease go: it reads as free and another process takes it", async () => {
      await store.acquireThreadLease(request({ ttlMs: 1 }));
      await sleep(20);

      expect(await store.getThreadLease("t1")).toBeUndefined();
      const taken = await store.acquireThreadLease(request({ runId: "r2", ownerId: "b" }));
      expect(taken.acquired).toBe(true);
      expect(taken.lease).toMatchObject({ runId: "r2", ownerId: "b" });
      // The first holder's release comes too late to end the new run's lease.
      await store.releaseThreadLease("t1", "r1");
      expect(await store.getThreadLease("t1")).toEqual(taken.lease);
    });

    it("ends every thread lease of an owner whose process is gone, unexpired or not, and no other's", async () => {
      await store.acquireThreadLease(request({ threadId: "t1", runId: "r1" }));
      await store.acquireThreadLease(request({ threadId: "t2", runId: "r2", ttlMs: 1 }));
      await store.acquireThreadLease(request({ threadId: "t3", runId: "r3", ownerId: "b" }));
      await sleep(20);

      await store.releaseOwnerThreadLeases("a");
      await store.releaseOwnerThreadLeases("nobody");

      expect(await store.getThreadLease("t1")).toBeUndefined();
      expect(await store.getThreadLease("t3")).toMatchObject({ runId: "r3", ownerId: "b" });
      expect(await store.renewThreadLeases("a", 60_000)).toEqual([]);
      const taken = await store.acquireThreadLease(request({ threadId: "t1", runId: "r4", ownerId: "c" }));
      expect(taken).toMatchObject({ acquired: true, lease: { ownerId: "c" } });
    });

    it("renews an owner's unexpired leases only", async () => {
      await store.acquireThreadLease(request({ threadId: "t1", runId: "r1", ttlMs: 300 }));
      await store.acquireThreadLease(request({ threadId: "t2", runId: "r2", ttlMs: 300 }));
      await store.acquireThreadLease(request({ threadId: "t3", runId: "r3", ttlMs: 1 }));
      await store.acquireThreadLease(request({ threadId: "t4", runId: "r4", ownerId: "b", ttlMs: 300 }));
      await sleep(20);

      const renewed = await store.renewThreadLeases("a", 60_000);

      expect(renewed.map((lease) => lease.threadId).sort()).toEqual(["t1", "t2"]);
      await sleep(400);
      expect((await store.getThreadLease("t1"))?.runId).toBe("r1");
      expect((await store.getThreadLease("t2"))?.expiresAt).toBe(
        renewed.find((l) => l.threadId === "t2")!.expiresAt,
      );
      expect(await store.getThreadLease("t3")).toBeUndefined();
      expect(await store.getThreadLease("t4")).toBeUndefined();
      await expectCode(store.renewThreadLeases("a", 0), "INVALID_ARGUMENT");
      await expectCode(store.acquireThreadLease(request({ runId: "" })), "INVALID_ARGUMENT");
    });
  });

  describe("run chunks", () => {
    const chunks = [
      { type: "start", messageId: "m2" },
      { type: "text-delta", id: "t", delta: "Hel" },
      { type: "text-delta", id: "t", delta: "lo ✓ \u0000" },
      { type: "data-pai-action", data: { nested: [1, null, "x"] } },
    ];

    it("stores a run's chunks in order, keeps a chunk written twice as first stored, and reads after a seq", async () => {
      await store.appendRunChunks({ runId: "r1", seq: 0, chunks: chunks.slice(0, 2) });
      await store.appendRunChunks({ runId: "r1", seq: 2, chunks: chunks.slice(2) });
      await store.appendRunChunks({ runId: "r1", seq: 1, chunks: [{ type: "rewritten" }] });
      await store.appendRunChunks({ runId: "r2", seq: 0, chunks: [{ type: "other run" }] });

      const all = await store.listRunChunks("r1");
      expect(all).toEqual(chunks.map((chunk, seq) => ({ runId: "r1", seq, chunk })));
      expect((await store.listRunChunks("r1", { afterSeq: 1 })).map((record) => record.seq)).toEqual([2, 3]);
      expect(await store.listRunChunks("r1", { afterSeq: 3 })).toEqual([]);
      expect(await store.listRunChunks("missing")).toEqual([]);
      await expectCode(store.appendRunChunks({ runId: "r1", seq: -1, chunks: [] }), "INVALID_ARGUMENT");
      await expectCode(store.appendRunChunks({ runId: "r1", seq: 9, chunks: [1n] }), "INVALID_ARGUMENT");
    });

    it("prunes the chunks of runs that ended before a time, keeping running and recent runs'", async () => {
      await store.createRun(run({ id: "old", status: "completed", endedAt: 1000 }));
      await store.createRun(run({ id: "interrupted", status: "interrupted", endedAt: 1500 }));
      await store.createRun(run({ id: "live" }));
      await store.createRun(run({ id: "recent", status: "completed", endedAt: 5000 }));
      for (const runId of ["old", "interrupted", "live", "recent"])
        await store.appendRunChunks({ runId, seq: 0, chunks: [{ type: "start" }] });

      await store.pruneRunChunks(2000);

      expect(await store.listRunChunks("old")).toEqual([]);
      expect(await store.listRunChunks("interrupted")).toEqual([]);
      expect(await store.listRunChunks("live")).toHaveLength(1);
      expect(await store.listRunChunks("recent")).toHaveLength(1);
    });

    it("deletes a thread's run chunks and its thread lease with the thread", async () => {
      await store.commitRun({ thread: thread(), messages: conversation, run: run() });
      await store.commitRun({
        thread: thread({ id: "t2" }),
        messages: [],
        run: run({ id: "r2", threadId: "t2" }),
      });
      await store.appendRunChunks({ runId: "r1", seq: 0, chunks });
      await store.appendRunChunks({ runId: "r2", seq: 0, chunks });
      await store.acquireThreadLease({ threadId: "t1", runId: "r1", ownerId: "a", ttlMs: 60_000 });

      await store.deleteThread("t1");

      expect(await store.listRunChunks("r1")).toEqual([]);
      expect(await store.getThreadLease("t1")).toBeUndefined();
      expect(await store.listRunChunks("r2")).toHaveLength(chunks.length);
    });

    it("wakes a run's watchers on new chunks and on its lease's release (SQLite cannot tell: readers poll)", async () => {
      if (name === "sqlite") {
        expect(store.watchRun).toBeUndefined();
        return;
      }
      const woken: string[] = [];
      const stop = store.watchRun!("r1", () => woken.push("r1"));
      const other = store.watchRun!("r2", () => woken.push("r2"));
      await store.acquireThreadLease({ threadId: "t1", runId: "r1", ownerId: "a", ttlMs: 60_000 });
      // The first notification may wait for the listening connection; the watcher sees a later one.
      const deadline = Date.now() + 10_000;
      for (let seq = 0; !woken.includes("r1") && Date.now() < deadline; seq++) {
        await store.appendRunChunks({ runId: "r1", seq, chunks: [{ type: "start" }] });
        await sleep(50);
      }
      expect(woken).toContain("r1");
      woken.length = 0;
      await store.releaseThreadLease("t1", "r1");
      await eventually(() => woken.includes("r1"));
      // A gone owner's leases, ended all at once, wake their runs' watchers too.
      await store.acquireThreadLease({ threadId: "t2", runId: "r2", ownerId: "b", ttlMs: 60_000 });
      await store.releaseOwnerThreadLeases("b");
      await eventually(() => woken.includes("r2"));
      stop();
      woken.length = 0;
      await store.appendRunChunks({ runId: "r1", seq: 100, chunks: [{ type: "start" }] });
      await sleep(200);
      expect(woken).toEqual([]);
      other();
    });
  });

  describe("stop requests", () => {
    it("records a stop only for a running run, once, and lists it among the runs asked about", async () => {
      await store.createRun(run({ id: "r1" }));
      await store.createRun(run({ id: "r2" }));
      await store.createRun(run({ id: "done", status: "completed", endedAt: 2000 }));

      expect(await store.requestRunStop("r1")).toBe(true);
      expect(await store.requestRunStop("r1")).toBe(true);
      expect(await store.requestRunStop("done")).toBe(false);
      expect(await store.requestRunStop("missing")).toBe(false);

      expect(await store.listRunStopRequests(["r1", "r2", "done", "missing"])).toEqual(["r1"]);
      expect(await store.listRunStopRequests(["r2"])).toEqual([]);
      expect(await store.listRunStopRequests([])).toEqual([]);
      await expectCode(store.listRunStopRequests([""]), "INVALID_ARGUMENT");
    });

    it("keeps a stop request when the run's owner writes its run record again", async () => {
      await store.commitRun({ thread: thread(), messages: conversation, run: run({ ownerId: "a" }) });
      expect(await store.requestRunStop("r1")).toBe(true);

      await store.commitRun({ thread: thread(), messages: conversation, run: run({ ownerId: "a" }) });
      await store.updateRun("r1", { ownerId: "a" });

      expect(await store.listRunStopRequests(["r1"])).toEqual(["r1"]);
    });

    it("prunes the stop requests of runs that ended before a time and deletes them with their thread", async () => {
      await store.commitRun({ thread: thread(), messages: [], run: run({ id: "old" }) });
      await store.commitRun({ thread: thread(), messages: [], run: run({ id: "recent" }) });
      await store.commitRun({
        thread: thread({ id: "t2" }),
        messages: [],
        run: run({ id: "other", threadId: "t2" }),
      });
      for (const runId of ["old", "recent", "other"]) expect(await store.requestRunStop(runId)).toBe(true);
      await store.settleRun("old", "running", { status: "cancelled", endedAt: 1000 });
      await store.settleRun("recent", "running", { status: "cancelled", endedAt: 5000 });

      await store.pruneRunChunks(2000);
      expect((await store.listRunStopRequests(["old", "recent", "other"])).sort()).toEqual([
        "other",
        "recent",
      ]);

      await store.deleteThread("t1");
      expect(await store.listRunStopRequests(["old", "recent", "other"])).toEqual(["other"]);
    });
  });

  describe("checkpoints", () => {
    it("records checkpoints and lists a thread's oldest first, by time then id", async () => {
      // Sizes past 2^32 bytes, and a fractional time, come back as the same numbers.
      const big = checkpoint({
        id: "k3",
        createdAt: 2000.5,
        totalBytes: 6_000_000_000,
        bytesAdded: 5_000_000_000,
      });
      await store.putCheckpoint(big);
      await store.putCheckpoint(checkpoint({ id: "k2", createdAt: 1000 }));
      await store.putCheckpoint(checkpoint({ id: "k1", createdAt: 1000, messageId: "m1" }));
      await store.putCheckpoint(checkpoint({ id: "k0", threadId: "t2", createdAt: 500 }));

      expect(await store.listCheckpoints("t1")).toEqual([
        checkpoint({ id: "k1", createdAt: 1000, messageId: "m1" }),
        checkpoint({ id: "k2", createdAt: 1000 }),
        big,
      ]);
      expect(await store.listCheckpoints("t2")).toEqual([
        checkpoint({ id: "k0", threadId: "t2", createdAt: 500 }),
      ]);
      expect(await store.listCheckpoints("missing")).toEqual([]);

      // Putting an id again replaces its record.
      await store.putCheckpoint(checkpoint({ id: "k2", createdAt: 3000, files: 9 }));
      expect((await store.listCheckpoints("t1")).map((found) => [found.id, found.files])).toEqual([
        ["k1", 3],
        ["k3", 3],
        ["k2", 9],
      ]);
    });

    it("deletes only the named checkpoints of the thread named", async () => {
      await store.putCheckpoint(checkpoint({ id: "k1" }));
      await store.putCheckpoint(checkpoint({ id: "k2", createdAt: 2000 }));
      await store.putCheckpoint(checkpoint({ id: "k3", createdAt: 3000 }));
      await store.putCheckpoint(checkpoint({ id: "other", threadId: "t2" }));

      await store.deleteCheckpoints("t1", ["k1", "k3", "other", "missing"]);
      await store.deleteCheckpoints("t1", []);

      expect((await store.listCheckpoints("t1")).map((found) => found.id)).toEqual(["k2"]);
      expect((await store.listCheckpoints("t2")).map((found) => found.id)).toEqual(["other"]);

      await store.deleteCheckpoints("t2", ["other"]);
      expect(await store.listCheckpoints("t2")).toEqual([]);
    });

    it("deletes a thread's checkpoints with the thread, and only its", async () => {
      await store.commitRun({ thread: thread(), messages: conversation, run: run() });
      await store.commitRun({
        thread: thread({ id: "t2" }),
        messages: [],
        run: run({ id: "r2", threadId: "t2" }),
      });
      await store.putCheckpoint(checkpoint({ id: "k1" }));
      await store.putCheckpoint(checkpoint({ id: "k2", createdAt: 2000 }));
      await store.putCheckpoint(checkpoint({ id: "k3", threadId: "t2" }));

      await store.deleteThread("t1");

      expect(await store.listCheckpoints("t1")).toEqual([]);
      expect(await store.listCheckpoints("t2")).toEqual([checkpoint({ id: "k3", threadId: "t2" })]);
    });

    it("lists the manifest digest of every thread's checkpoints once, and forgets those deleted", async () => {
      const digest = (n: number) => String(n).repeat(64);
      expect(await store.listCheckpointDigests()).toEqual([]);
      await store.putCheckpoint(checkpoint({ id: "k1", manifestDigest: digest(1) }));
      await store.putCheckpoint(checkpoint({ id: "k2", manifestDigest: digest(2), createdAt: 2000 }));
      // a fork's copy of a checkpoint: the same manifest on another thread
      await store.putCheckpoint(checkpoint({ id: "k3", threadId: "t2", manifestDigest: digest(1) }));
      await store.putCheckpoint(checkpoint({ id: "k4", threadId: "t3", manifestDigest: digest(3) }));
      expect((await store.listCheckpointDigests()).sort()).toEqual([digest(1), digest(2), digest(3)]);

      await store.deleteCheckpoints("t1", ["k1", "k2"]);
      expect((await store.listCheckpointDigests()).sort()).toEqual([digest(1), digest(3)]);
      await store.deleteCheckpoints("t2", ["k3"]);
      expect(await store.listCheckpointDigests()).toEqual([digest(3)]);
    });

    it("refuses a malformed checkpoint or id with INVALID_ARGUMENT and stores nothing", async () => {
      const digest = "0123456789abcdef".repeat(4);
      const malformed: CheckpointRecord[] = [
        checkpoint({ manifestDigest: digest.toUpperCase() }),
        checkpoint({ manifestDigest: digest.slice(1) }),
        checkpoint({ manifestDigest: `${digest}0` }),
        checkpoint({ manifestDigest: `sha256:${digest}` }),
        checkpoint({ id: "" }),
        checkpoint({ threadId: "" }),
        checkpoint({ capability: "" }),
        checkpoint({ files: -1 }),
        checkpoint({ totalBytes: 1.5 }),
        checkpoint({ bytesAdded: Number.NaN }),
        { ...checkpoint(), messageId: undefined } as never,
      ];
      for (const record of malformed) await expectCode(store.putCheckpoint(record), "INVALID_ARGUMENT");
      expect(await store.listCheckpoints("t1")).toEqual([]);

      await store.putCheckpoint(checkpoint());
      await expectCode(store.deleteCheckpoints("t1", [""]), "INVALID_ARGUMENT");
      await expectCode(store.deleteCheckpoints("t1", "k1" as never), "INVALID_ARGUMENT");
      expect(await store.listCheckpoints("t1")).toEqual([checkpoint()]);
    });
  });

  describe("close", () => {
    it("rejects every method with STORE_CLOSED after close", async () => {
      await store.ensureThread(thread());
      await store.close();
      await store.close();

      await expectCode(store.getThread("t1"), "STORE_CLOSED");
      await expectCode(store.ensureThread(thread()), "STORE_CLOSED");
      await expectCode(store.listThreads({ ownerKey: "user:1" }), "STORE_CLOSED");
      await expectCode(store.deleteThread("t1"), "STORE_CLOSED");
      await expectCode(store.loadMessages("t1"), "STORE_CLOSED");
      await expectCode(store.createRun(run()), "STORE_CLOSED");
      await expectCode(store.getRun("r1"), "STORE_CLOSED");
      await expectCode(store.listRuns("t1"), "STORE_CLOSED");
      await expectCode(store.updateRun("r1", {}), "STORE_CLOSED");
      await expectCode(store.commitRun({ thread: thread(), messages: [], run: run() }), "STORE_CLOSED");
      await expectCode(store.appendToolData(toolData()), "STORE_CLOSED");
      await expectCode(store.listToolData({ threadId: "t1" }), "STORE_CLOSED");
      await expectCode(store.putPendingAction(action()), "STORE_CLOSED");
      await expectCode(store.getPendingAction("a1"), "STORE_CLOSED");
      await expectCode(store.listPendingActions({}), "STORE_CLOSED");
      await expectCode(store.settlePendingAction("a1", "pending", { status: "cancelled" }), "STORE_CLOSED");
      await expectCode(store.claimPendingAction("a1", "r1"), "STORE_CLOSED");
      await expectCode(store.putLease(lease()), "STORE_CLOSED");
      await expectCode(store.listLeases(), "STORE_CLOSED");
      await expectCode(store.touchLease("sandbox", "thread", "t1", 1), "STORE_CLOSED");
      await expectCode(store.deleteLease("sandbox", "thread", "t1"), "STORE_CLOSED");
      await expectCode(store.claimLease("sandbox", "thread", "t1", { from: "a", to: "b" }), "STORE_CLOSED");
      await expectCode(
        store.requestLeaseHandover("sandbox", "thread", "t1", { from: "a", to: "b" }),
        "STORE_CLOSED",
      );
      await expectCode(store.listRunsByStatus("running"), "STORE_CLOSED");
      await expectCode(store.settleRun("r1", "running", { status: "interrupted" }), "STORE_CLOSED");
      await expectCode(
        store.heartbeatOwner({ ownerId: "a", host: "h", pid: 1, startedAt: 1, heartbeatAt: 1 }),
        "STORE_CLOSED",
      );
      await expectCode(store.listOwners(), "STORE_CLOSED");
      await expectCode(store.removeOwner("a"), "STORE_CLOSED");
      await expectCode(store.releaseOwnerThreadLeases("a"), "STORE_CLOSED");
      await expectCode(
        store.acquireThreadLease({ threadId: "t1", runId: "r1", ownerId: "a", ttlMs: 1000 }),
        "STORE_CLOSED",
      );
      await expectCode(store.renewThreadLeases("a", 1000), "STORE_CLOSED");
      await expectCode(store.releaseThreadLease("t1", "r1"), "STORE_CLOSED");
      await expectCode(store.getThreadLease("t1"), "STORE_CLOSED");
      await expectCode(store.appendRunChunks({ runId: "r1", seq: 0, chunks: [] }), "STORE_CLOSED");
      await expectCode(store.listRunChunks("r1"), "STORE_CLOSED");
      await expectCode(store.pruneRunChunks(1), "STORE_CLOSED");
      await expectCode(store.requestRunStop("r1"), "STORE_CLOSED");
      await expectCode(store.listRunStopRequests(["r1"]), "STORE_CLOSED");
      await expectCode(store.putCheckpoint(checkpoint()), "STORE_CLOSED");
      await expectCode(store.listCheckpoints("t1"), "STORE_CLOSED");
      await expectCode(store.deleteCheckpoints("t1", ["k1"]), "STORE_CLOSED");
    });
  });
});
