import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import { PaiError } from "../errors/pai-error.ts";
import { createScriptedModel } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { createAgentRuntime } from "./create-agent-runtime.ts";

function setup() {
  const runtime = createAgentRuntime({
    pai: createPai({
      agents: {
        support: defineAgent({ identity: z.object({ userId: z.string() }) }),
        admin: defineAgent({ identity: z.object({ userId: z.string(), role: z.literal("admin") }) }),
      },
    }),
    store: createMemoryThreadStore(),
    model: createScriptedModel({ steps: [], fallback: { text: "ok" } }),
  });
  return runtime;
}

describe("thread access", () => {
  it("lists a caller's threads of the agents that accept them, even when another agent's schema rejects them", async () => {
    const runtime = setup();
    const ann = { userId: "ann" };
    const boss = { userId: "boss", role: "admin" };
    const first = await runtime.run({ agentId: "support", identity: ann, message: "one" });
    await first.done;
    await (await runtime.run({ agentId: "support", identity: ann, message: "two" })).done;
    const admin = await runtime.run({ agentId: "admin", identity: boss, message: "audit" });
    await admin.done;

    const listed = await runtime.listThreads({ identity: ann });
    expect(listed.map((thread) => thread.title)).toEqual(["two", "one"]);
    expect(await runtime.listThreads({ identity: ann, limit: 1 })).toHaveLength(1);
    expect((await runtime.listThreads({ identity: boss })).map((thread) => thread.title)).toEqual(["audit"]);
    await expect(runtime.listThreads({ identity: ann, agentId: "admin" })).rejects.toSatisfy((error) =>
      PaiError.hasCode(error, "INVALID_IDENTITY"),
    );
    await runtime.close();
  });

  it("shows a thread only to its owner: another identity and one the schema rejects both see no thread", async () => {
    const runtime = setup();
    const run = await runtime.run({ agentId: "support", identity: { userId: "ann" }, message: "hi" });
    await run.done;
    expect(await runtime.access.ownedThread(run.threadId, { userId: "ann" })).toMatchObject({
      id: run.threadId,
    });
    expect(await runtime.access.ownedThread(run.threadId, { userId: "bob" })).toBeUndefined();
    expect(await runtime.access.ownedThread(run.threadId, { user: 1 })).toBeUndefined();
    expect(await runtime.getThread(run.threadId, { identity: { userId: "bob" } })).toBeUndefined();
    await expect(runtime.access.requireThread(run.threadId, { userId: "bob" })).rejects.toSatisfy((error) =>
      PaiError.hasCode(error, "NOT_FOUND"),
    );
    await expect(
      runtime.run({ agentId: "support", identity: { userId: "bob" }, threadId: run.threadId, message: "x" }),
    ).rejects.toSatisfy((error) => PaiError.hasCode(error, "NOT_FOUND"));
    await runtime.close();
  });
});
