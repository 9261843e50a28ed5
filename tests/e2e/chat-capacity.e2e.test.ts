// The chat server on a sandbox pool too small for its conversations (real engine, real image): two conversations
// hold the two sandboxes, the third cannot get one. It is told so, with the numbers, on its stream, and the
// server logs the error with its thread and run.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { followRunStream } from "@pai/react";
import { dockerSandbox } from "@pai/sandbox";
import type { UIMessage } from "ai";
import { test as base, describe, expect, vi } from "vitest";
import { selectModel } from "../../examples/chat/select-model.ts";
import { type ChatServer, createChatServer } from "../../examples/chat/server/create-chat-server.ts";
import { removePoolContainers, sandboxImage, uniquePoolId } from "../sandbox/docker-helpers.ts";

interface CapacityFixture {
  server: ChatServer;
  /** Everything written to this process's stderr since the server started. */
  stderr(): string;
}

// biome-ignore lint/correctness/noEmptyPattern: vitest reads a fixture's dependencies from this pattern
const test = base.extend("chat", async ({}, { onCleanup }): Promise<CapacityFixture> => {
  const directory = await mkdtemp(join(tmpdir(), "pai-chat-capacity-"));
  const poolId = uniquePoolId("chat-capacity");
  const stderr = vi.spyOn(process.stderr, "write");
  let server: ChatServer | undefined;
  onCleanup(async () => {
    stderr.mockRestore();
    await server?.close();
    await removePoolContainers(poolId);
    await rm(directory, { recursive: true, force: true });
  });
  server = await createChatServer({
    buildPage: false,
    dbPath: join(directory, "chat.db"),
    model: selectModel({}),
    sandbox: dockerSandbox({
      image: sandboxImage,
      poolId,
      pool: { min: 2, max: 2, acquireTimeoutMs: 15_000 },
    }),
  });
  return { server, stderr: () => stderr.mock.calls.map(([chunk]) => String(chunk)).join("") };
});

async function send(server: ChatServer, threadId: string): Promise<{ message: UIMessage; runId: string }> {
  const response = await fetch(`${server.url}/api/chat`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      id: threadId,
      messages: [{ id: `u-${threadId}`, role: "user", parts: [{ type: "text", text: "hello" }] }],
    }),
  });
  expect(response.status).toBe(200);
  const message = await followRunStream({ stream: response.body!, messages: [], onMessage: () => {} });
  return { message: message!, runId: response.headers.get("x-pai-run-id")! };
}

function partOf(message: UIMessage, type: string): Record<string, unknown> | undefined {
  return message.parts.find((part) => part.type === type) as Record<string, unknown> | undefined;
}

describe("chat server with its sandbox pool full", () => {
  test("tells the third conversation that no sandbox is free, with the numbers, and logs it on the server", async ({
    chat,
  }) => {
    const { server } = chat;
    for (const threadId of ["t1", "t2"]) {
      const { message } = await send(server, threadId);
      expect(partOf(message, "tool-runScript")).toMatchObject({ state: "output-available" });
    }
    expect(server.runtime.leases()).toHaveLength(2);

    const third = await send(server, "t3");
    expect(partOf(third.message, "tool-runScript")).toMatchObject({ state: "output-error" });
    const capability = third.message.parts
      .filter((part) => part.type === "data-pai-capability")
      .map((part) => (part as { data: Record<string, unknown> }).data);
    expect(capability.map((event) => event.status)).toEqual(["provisioning", "failed"]);
    expect(capability[1]).toMatchObject({
      capability: "sandbox",
      status: "failed",
      error: expect.stringMatching(/POOL_EXHAUSTED: 2 of 2 in use/),
    });
    expect(third.message.parts.at(-1)).toMatchObject({
      type: "text",
      text: expect.stringContaining("The script did not run"),
    });

    const logged = chat
      .stderr()
      .split("\n")
      .find((line) => line.includes("[pai chat] runtime error") && line.includes("thread=t3"));
    expect(logged).toBeDefined();
    expect(logged).toContain(`run=${third.runId}`);
    expect(logged).toContain("tool=runScript");
    expect(logged).toContain("POOL_EXHAUSTED");
    expect(logged).toMatch(/"max":2/);
    expect(logged).toMatch(/"borrowed":2/);
  });
});
