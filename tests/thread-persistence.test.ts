import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createAgentRuntime,
  createPai,
  createSqliteThreadStore,
  defineAgent,
  defineTool,
  PaiError,
} from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { afterEach, beforeEach, expect, it } from "vitest";
import { z } from "zod";

const note = defineTool({
  id: "note",
  description: "Remember a note",
  inputSchema: z.object({ text: z.string() }),
  execute: (ctx) => ({ saved: ctx.input.text }),
});
const pai = createPai({ agents: { notes: defineAgent({ tools: { note } }) } });

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pai-persist-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

it("continues a conversation in a second runtime opened on the same SQLite file", async () => {
  const path = join(dir, "threads.db");
  const first = createAgentRuntime({
    pai,
    store: createSqliteThreadStore({ path }),
    model: createScriptedModel({
      steps: [{ toolCalls: [{ toolName: "note", input: { text: "milk" } }] }, { text: "noted" }],
    }),
  });
  const run = await first.run({ agentId: "notes", identity: { userId: "u1" }, message: "remember milk" });
  await run.done;
  await first.close();

  const model = createScriptedModel({ steps: [{ text: "you asked me to remember milk" }] });
  const second = createAgentRuntime({ pai, store: createSqliteThreadStore({ path }), model });
  const next = await second.run({
    agentId: "notes",
    identity: { userId: "u1" },
    threadId: run.threadId,
    message: "what did I say?",
  });
  const result = await next.done;

  expect(result.status).toBe("completed");
  const prompt = JSON.stringify(model.doStreamCalls[0]?.prompt);
  expect(prompt).toContain("remember milk");
  expect(prompt).toContain('"saved":"milk"');
  expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
  const snapshot = await second.getThread(run.threadId);
  expect(snapshot?.runs.map((r) => r.status)).toEqual(["completed", "completed"]);
  await second.close();
});

it("refuses a corrupt store with a clear error and leaves the file as it was", () => {
  const path = join(dir, "threads.db");
  writeFileSync(path, "this is not a database, but it is somebody's data");
  const before = readFileSync(path);
  expect(() => createSqliteThreadStore({ path })).toThrow(expect.objectContaining({ code: "STORE_CORRUPT" }));
  expect(readFileSync(path)).toEqual(before);
});

it("refuses an unwritable store location with a clear error", () => {
  const blocker = join(dir, "file");
  writeFileSync(blocker, "x");
  let error: unknown;
  try {
    createSqliteThreadStore({ path: join(blocker, "threads.db") });
  } catch (caught) {
    error = caught;
  }
  expect(PaiError.hasCode(error, "STORE_UNWRITABLE")).toBe(true);
});
