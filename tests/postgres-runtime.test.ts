import { homedir } from "node:os";
import { join } from "node:path";
import {
  type AgentRuntime,
  createAgentRuntime,
  createPai,
  defineAgent,
  defineTool,
  type RespondResult,
} from "@pai/core";
import { createPostgresThreadStore } from "@pai/core/postgres";
import { createScriptedModel } from "@pai/core/testing";
import pg from "pg";
import { afterEach, beforeEach, expect, it } from "vitest";
import { z } from "zod";
import { createTestSchema, type TestSchema } from "./fixtures/test-postgres.ts";

let resumes: string[] = [];
const deploy = defineTool({
  id: "deploy",
  description: "Deploy a service after a person approves",
  inputSchema: z.object({ service: z.string() }),
  outputSchema: z.object({ deployed: z.string(), by: z.string() }),
  resumeSchema: z.object({ by: z.string() }),
  execute: (ctx) => {
    if (ctx.entry.type !== "resume") return ctx.suspend({ question: `Deploy ${ctx.input.service}?` });
    const { by } = ctx.entry.resume as { by: string };
    resumes.push(by);
    return { deployed: ctx.input.service, by };
  },
});
const note = defineTool({
  id: "note",
  description: "Remember a note",
  inputSchema: z.object({ text: z.string() }),
  execute: (ctx) => ({ saved: ctx.input.text }),
});
const pai = createPai({ agents: { ops: defineAgent({ tools: { deploy, note } }) } });
const alice = { userId: "alice" };

let schema: TestSchema;
const runtimes: AgentRuntime[] = [];

/** A runtime on its own connections to the test's schema, as another process would have. */
async function runtimeOnPostgres(model: ReturnType<typeof createScriptedModel>): Promise<AgentRuntime> {
  const store = await createPostgresThreadStore({
    connectionString: schema.connectionString,
    schema: schema.name,
  });
  const runtime = createAgentRuntime({ pai, store, model });
  runtimes.push(runtime);
  return runtime;
}

beforeEach(() => {
  schema = createTestSchema();
  resumes = [];
});

afterEach(async () => {
  try {
    await Promise.all(runtimes.splice(0).map((runtime) => runtime.close()));
  } finally {
    await schema.drop();
  }
});

it("continues a conversation in a second runtime on the same Postgres schema", async () => {
  const first = await runtimeOnPostgres(
    createScriptedModel({
      steps: [{ toolCalls: [{ toolName: "note", input: { text: "milk" } }] }, { text: "noted" }],
    }),
  );
  const run = await first.run({ agentId: "ops", identity: alice, message: "remember milk" });
  expect((await run.done).status).toBe("completed");

  const model = createScriptedModel({ steps: [{ text: "you asked me to remember milk" }] });
  const second = await runtimeOnPostgres(model);
  const next = await second.run({
    agentId: "ops",
    identity: alice,
    threadId: run.threadId,
    message: "what did I say?",
  });
  const result = await next.done;

  expect(result.status).toBe("completed");
  const prompt = JSON.stringify(model.doStreamCalls[0]?.prompt);
  expect(prompt).toContain("remember milk");
  expect(prompt).toContain('"saved":"milk"');
  const snapshot = await first.getThread(run.threadId, { identity: alice });
  expect(snapshot?.runs.map((r) => r.status)).toEqual(["completed", "completed"]);
  expect(snapshot?.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
});

it("accepts one of two runtimes answering the same action at once, and resumes the tool once", async () => {
  const asking = await runtimeOnPostgres(
    createScriptedModel({ steps: [{ toolCalls: [{ toolName: "deploy", input: { service: "api" } }] }] }),
  );
  const run = await asking.run({ agentId: "ops", identity: alice, message: "deploy the api" });
  expect((await run.done).status).toBe("suspended");
  const [action] = await asking.listPendingActions({ threadId: run.threadId, identity: alice });
  const answerers = [
    await runtimeOnPostgres(createScriptedModel({ steps: [{ text: "Deployed by bob." }] })),
    await runtimeOnPostgres(createScriptedModel({ steps: [{ text: "Deployed by carol." }] })),
  ];
  // Hold the action's row: the answer that takes the thread's lease waits at the compare-and-set, the other waits
  // for the thread (another process may be answering the same action) and then finds the action settled.
  const locker = new pg.Client({ connectionString: schema.connectionString });
  await locker.connect();
  let results: RespondResult[];
  try {
    await locker.query("BEGIN");
    await locker.query(`SELECT 1 FROM "${schema.name}".pending_actions WHERE id = $1 FOR UPDATE`, [
      action!.actionId,
    ]);
    const answering = Promise.all(
      ["bob", "carol"].map((by, index) =>
        answerers[index]!.respond({
          threadId: action!.threadId,
          actionId: action!.actionId,
          toolCallId: action!.toolCallId,
          toolId: action!.toolId,
          inputHash: action!.inputHash,
          identity: alice,
          answer: { type: "resume", resume: { by } },
        }),
      ),
    );
    await waitForLockWaiters(locker, 1);
    await locker.query("COMMIT");
    results = await answering;
  } finally {
    await locker.end();
  }

  expect(results.map((result) => result.status).sort()).toEqual(["accepted", "already-settled"]);
  const [accepted] = results.filter(
    (result): result is Extract<RespondResult, { status: "accepted" }> => result.status === "accepted",
  );
  expect((await accepted!.run!.done).status).toBe("completed");
  expect(resumes).toHaveLength(1);
  const snapshot = await asking.getThread(run.threadId, { identity: alice });
  expect(snapshot?.runs.map((r) => r.status)).toEqual(["suspended", "completed"]);
  expect(JSON.stringify(snapshot?.messages)).toContain(`"by":"${resumes[0]}"`);
});

/** Waits until `count` other connections wait for a lock on the test's schema. */
async function waitForLockWaiters(client: pg.Client, count: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const { rows } = await client.query(
      `SELECT count(*)::integer AS waiting FROM pg_stat_activity
        WHERE wait_event_type = 'Lock' AND position($1 in query) > 0`,
      [schema.name],
    );
    if (rows[0].waiting >= count) return;
    if (Date.now() > deadline)
      throw new Error(`only ${rows[0].waiting} of ${count} answers wait for the lock`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

it("names one default checkpoint folder per database and schema, under the user's cache", async () => {
  const open = (schemaName: string) =>
    createPostgresThreadStore({ connectionString: schema.connectionString, schema: schemaName });
  const [first, second] = [await open(schema.name), await open(schema.name)];
  const other = createTestSchema();
  try {
    const third = await open(other.name);
    const cache = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
    expect(first.checkpointDirectory).toMatch(
      new RegExp(`^${join(cache, "pai", "checkpoints")}/postgres-[0-9a-f]{16}$`),
    );
    expect(second.checkpointDirectory).toBe(first.checkpointDirectory);
    expect(third.checkpointDirectory).not.toBe(first.checkpointDirectory);
    await third.close();
  } finally {
    await Promise.all([first.close(), second.close()]);
    await other.drop();
  }
});
