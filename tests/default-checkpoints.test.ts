// Checkpoints are on without any option: a runtime checkpoints a thread's resources into its thread store's own
// folder (`<database file>-checkpoints` for SQLite, a temporary folder for threads in memory, removed at close),
// rewinds restore from it after a restart, and `checkpoints: false` turns them off.
import { existsSync, readdirSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AgentRuntime,
  type AgentRuntimeOptions,
  createAgentRuntime,
  createMemoryThreadStore,
  createPai,
  createSqliteThreadStore,
  defineAgent,
  type ThreadStore,
} from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { memoryBoxBinding, writeToBox as write } from "./fixtures/memory-box.ts";

const pai = createPai({
  agents: { a: defineAgent({ identity: z.object({ userId: z.string() }), tools: { write } }) },
});
const identity = { userId: "alice" };
/** A message `path=content` makes the model write that file, then say "done". */
const model = createScriptedModel({
  steps: [],
  fallback: (call) => {
    const last = call.prompt.at(-1);
    if (last?.role !== "user") return { text: "done" };
    const text = last.content.map((part) => (part.type === "text" ? part.text : "")).join("");
    const [path = "", content = ""] = text.split("=");
    return { toolCalls: [{ toolName: "write", input: { path, content } }] };
  },
});

let directory: string;
let binding: ReturnType<typeof memoryBoxBinding>;
const opened: AgentRuntime[] = [];

function openRuntime(
  store: ThreadStore,
  checkpoints?: AgentRuntimeOptions<typeof pai>["checkpoints"],
): AgentRuntime {
  const runtime = createAgentRuntime({
    pai,
    store,
    model,
    capabilities: { box: binding },
    ...(checkpoints === undefined ? {} : { checkpoints }),
  });
  opened.push(runtime);
  return runtime;
}

async function turn(runtime: AgentRuntime, message: string, threadId?: string) {
  const run = await runtime.run({ agentId: "a", identity, message, ...(threadId ? { threadId } : {}) });
  const result = await run.done;
  return { threadId: result.threadId, lastMessageId: result.messages.at(-1)!.id };
}

/** The files of the thread's box: the box of the thread's current lease. */
async function boxFiles(runtime: AgentRuntime, threadId: string) {
  const lease = runtime.leases().find((entry) => entry.key === threadId);
  return Object.fromEntries([...(binding.boxes.get(lease?.resourceId ?? "") ?? [])].sort());
}

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), "pai-default-checkpoints-"));
  binding = memoryBoxBinding();
});

afterEach(async () => {
  for (const runtime of opened.splice(0)) await runtime.close();
  await rm(directory, { recursive: true, force: true });
});

describe("checkpoints with no checkpoint option", () => {
  it("go beside an SQLite file, and a new runtime on that file rewinds from them", async () => {
    const path = join(directory, "threads.db");
    const runtime = openRuntime(createSqliteThreadStore({ path }));
    const first = await turn(runtime, "a.txt=one");
    await turn(runtime, "a.txt=two", first.threadId);
    expect(await runtime.listCheckpoints(first.threadId)).toHaveLength(2);
    expect(readdirSync(`${path}-checkpoints`).length).toBeGreaterThan(0);
    await runtime.close();

    const restarted = openRuntime(createSqliteThreadStore({ path }));
    const rewound = await restarted.rewindThread({
      threadId: first.threadId,
      toMessageId: first.lastMessageId,
      identity,
    });
    expect(rewound.restored).toMatchObject([{ capability: "box" }]);
    expect(await boxFiles(restarted, first.threadId)).toEqual({ "a.txt": "one" });
  });

  it("go to a temporary folder for threads in memory, removed when the runtime closes", async () => {
    const previous = process.env.TMPDIR;
    process.env.TMPDIR = directory;
    let runtime: AgentRuntime;
    try {
      runtime = openRuntime(createMemoryThreadStore());
    } finally {
      if (previous === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = previous;
    }
    const first = await turn(runtime, "a.txt=one");
    await turn(runtime, "a.txt=two", first.threadId);
    const folders = readdirSync(directory).filter((name) => name.startsWith("pai-checkpoints-"));
    expect(folders).toHaveLength(1);

    await runtime.rewindThread({ threadId: first.threadId, toMessageId: first.lastMessageId, identity });
    expect(await boxFiles(runtime, first.threadId)).toEqual({ "a.txt": "one" });
    await runtime.close();
    expect(existsSync(join(directory, folders[0]!))).toBe(false);
  });

  it("are not taken with checkpoints: false; a rewind then restores the messages only", async () => {
    const path = join(directory, "threads.db");
    const runtime = openRuntime(createSqliteThreadStore({ path }), false);
    const first = await turn(runtime, "a.txt=one");
    await turn(runtime, "a.txt=two", first.threadId);
    expect(await runtime.listCheckpoints(first.threadId)).toEqual([]);
    expect(existsSync(`${path}-checkpoints`)).toBe(false);

    const rewound = await runtime.rewindThread({
      threadId: first.threadId,
      toMessageId: first.lastMessageId,
      identity,
    });
    expect(rewound.restored).toEqual([]);
    expect(await boxFiles(runtime, first.threadId)).toEqual({ "a.txt": "two" });
  });
});
