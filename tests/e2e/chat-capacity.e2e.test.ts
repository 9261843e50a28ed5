// The chat server with more conversations than sandboxes (real engine, real image): five conversations on a pool of
// two. An idle conversation's sandbox hibernates to make room for the next; continuing it wakes the same sandbox.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { followRunStream } from "@pai/react";
import { dockerSandbox } from "@pai/sandbox";
import type { UIMessage } from "ai";
import { test as base, describe, expect, vi } from "vitest";
import { selectModel } from "../../examples/chat/select-model.ts";
import { type ChatServer, createChatServer } from "../../examples/chat/server/create-chat-server.ts";
import {
  poolContainers,
  removePoolContainers,
  sandboxImage,
  uniquePoolId,
} from "../sandbox/docker-helpers.ts";

interface CapacityFixture {
  server: ChatServer;
  poolId: string;
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
      pool: { min: 1, max: 2, acquireTimeoutMs: 30_000 },
    }),
  });
  return { server, poolId, stderr: () => stderr.mock.calls.map(([chunk]) => String(chunk)).join("") };
});

async function send(
  server: ChatServer,
  threadId: string,
  turn = 1,
): Promise<{ message: UIMessage; runId: string }> {
  const response = await fetch(`${server.url}/api/chat`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      id: threadId,
      messages: [{ id: `u-${threadId}-${turn}`, role: "user", parts: [{ type: "text", text: "hello" }] }],
    }),
  });
  expect(response.status).toBe(200);
  const message = await followRunStream({ stream: response.body!, messages: [], onMessage: () => {} });
  return { message: message!, runId: response.headers.get("x-pai-run-id")! };
}

function partOf(message: UIMessage, type: string): Record<string, unknown> | undefined {
  return message.parts.find((part) => part.type === type) as Record<string, unknown> | undefined;
}

/** The message's capability status events. */
function statusesOf(message: UIMessage): Array<Record<string, unknown>> {
  return message.parts
    .filter((part) => part.type === "data-pai-capability")
    .map((part) => (part as { data: Record<string, unknown> }).data);
}

describe("chat server with more conversations than sandboxes", () => {
  test("five conversations on two sandboxes all run, and each continued one wakes its own sandbox", async ({
    chat,
  }) => {
    const { server } = chat;
    const threads = ["t1", "t2", "t3", "t4", "t5"];
    const sandboxOf = new Map<string, unknown>();
    for (const threadId of threads) {
      const { message } = await send(server, threadId);
      expect(partOf(message, "tool-runScript")).toMatchObject({ state: "output-available" });
      const ready = statusesOf(message).find((event) => event.status === "ready");
      sandboxOf.set(threadId, ready?.resourceId);
    }
    expect(new Set(sandboxOf.values()).size).toBe(5);
    expect(server.runtime.leases()).toHaveLength(5);

    const woken: string[] = [];
    for (const threadId of threads) {
      const { message } = await send(server, threadId, 2);
      expect(partOf(message, "tool-runScript")).toMatchObject({ state: "output-available" });
      const statuses = statusesOf(message);
      expect(statuses.map((event) => event.status)).not.toContain("failed");
      expect(statuses.map((event) => event.status)).not.toContain("provisioning");
      const wake = statuses.find((event) => event.status === "woken");
      if (wake) {
        expect(wake.resourceId).toBe(sandboxOf.get(threadId));
        woken.push(threadId);
      }
    }
    // The first three had been hibernated to make room for the last ones.
    expect(woken.length).toBeGreaterThanOrEqual(3);
    expect(chat.stderr()).not.toContain("POOL_EXHAUSTED");
    expect((await poolContainers(chat.poolId)).length).toBeLessThanOrEqual(5 + 1);
  });
});
