// Regenerate, Edit and Fork through plain `useChat` (the AI SDK's own `Chat`, what `useChat` runs on) over HTTP:
// `regenerate({ messageId })` and `sendMessage({ text, messageId })` rewind the thread and its box's files, then run.
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LanguageModelV4CallOptions } from "@ai-sdk/provider";
import { Chat } from "@ai-sdk/react";
import {
  type AgentRuntime,
  createAgentRuntime,
  createFileCheckpointStore,
  createMemoryThreadStore,
  createPai,
  createPaiHandler,
  defineAgent,
  defineTool,
  toNodeListener,
} from "@pai/core";
import { lastMessageOnly } from "@pai/core/client";
import { createScriptedModel, type ScriptedStep } from "@pai/core/testing";
import { DefaultChatTransport, type UIMessage } from "ai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { memoryBox, memoryBoxBinding, writeToBox as write } from "./fixtures/memory-box.ts";

const remove = defineTool({
  id: "remove",
  description: "deletes a file",
  inputSchema: z.object({ path: z.string() }),
  capabilities: { box: memoryBox },
  execute: async (ctx) => {
    await ctx.capabilities.box.remove(ctx.input.path);
    return { files: await ctx.capabilities.box.files() };
  },
});

/** `write a.txt=one` writes a file, `delete a.txt` removes it, anything else is talk; answers are numbered. */
let answers = 0;
function nextStep(call: LanguageModelV4CallOptions): ScriptedStep {
  const last = call.prompt.at(-1);
  if (last?.role === "tool") {
    const result = last.content.find((part) => part.type === "tool-result");
    const output = result?.output as { value?: { files?: unknown } } | undefined;
    const files = output?.value?.files;
    return { text: `answer ${++answers}: ${JSON.stringify(files)}` };
  }
  const text =
    last?.role === "user" ? last.content.map((p) => (p.type === "text" ? p.text : "")).join("") : "";
  const [verb, argument = ""] = text.split(" ");
  if (verb === "write") {
    const [path = "", content = ""] = argument.split("=");
    return { toolCalls: [{ toolName: "write", input: { path, content } }] };
  }
  if (verb === "delete") return { toolCalls: [{ toolName: "remove", input: { path: argument } }] };
  return { text: `answer ${++answers}: ${text}` };
}

let server: Server;
let url: string;
let runtime: AgentRuntime;
let binding: ReturnType<typeof memoryBoxBinding>;
let dir: string;

beforeEach(async () => {
  answers = 0;
  dir = await mkdtemp(join(tmpdir(), "pai-chat-rewind-"));
  binding = memoryBoxBinding();
  runtime = createAgentRuntime({
    pai: createPai({
      agents: { a: defineAgent({ identity: z.object({ userId: z.string() }), tools: { write, remove } }) },
    }),
    store: createMemoryThreadStore(),
    model: createScriptedModel({ steps: [], fallback: nextStep }),
    capabilities: { box: binding },
    checkpoints: { store: createFileCheckpointStore({ directory: join(dir, "checkpoints") }) },
  });
  const api = toNodeListener(
    createPaiHandler({
      runtime,
      authenticate: (request) => {
        const user = request.headers.get("x-user");
        return user ? { userId: user } : null;
      },
    }),
  );
  server = createServer(api);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await runtime.close();
  await closed;
  await rm(dir, { recursive: true, force: true });
});

function chatFor(threadId: string, user = "alice") {
  return new Chat<UIMessage>({
    id: threadId,
    transport: new DefaultChatTransport({
      api: `${url}/api/chat`,
      headers: { "x-user": user },
      prepareSendMessagesRequest: lastMessageOnly,
    }),
  });
}

/** The box of a thread, as the binding holds it. */
function boxOf(threadId: string): Record<string, string> {
  const lease = runtime.leases().find((entry) => entry.key === threadId);
  const files = binding.boxes.get(lease?.resourceId ?? "");
  if (!files) throw new Error(`thread ${threadId} has no box`);
  return Object.fromEntries([...files].sort());
}

function textOf(message: UIMessage | undefined): string {
  return (message?.parts ?? []).map((part) => (part.type === "text" ? part.text : "")).join("");
}

async function stored(threadId: string, user = "alice") {
  const response = await fetch(`${url}/api/threads/${threadId}`, { headers: { "x-user": user } });
  return (await response.json()) as {
    messages: UIMessage[];
    runs: Array<{ id: string; status: string; rewind?: Record<string, unknown> }>;
  };
}

function post(path: string, body: unknown, user = "alice") {
  return fetch(`${url}/api${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-user": user },
    body: JSON.stringify(body),
  });
}

/** Two turns on a new chat: turn 1 writes a.txt, turn 2 deletes it. */
async function twoTurns(threadId: string) {
  const chat = chatFor(threadId);
  await chat.sendMessage({ text: "write a.txt=one" });
  await chat.sendMessage({ text: "delete a.txt" });
  expect(chat.error).toBeUndefined();
  expect(boxOf(threadId)).toEqual({});
  return chat;
}

describe("useChat's regenerate and edit rewind the thread and its files", () => {
  it("regenerates an answer: the old one is gone, the files are back as they were before it, the new one streams", async () => {
    const chat = await twoTurns("t-regen");
    const old = chat.messages.at(-1)!;
    expect(textOf(old)).toBe("answer 2: {}");
    await chat.regenerate({ messageId: old.id });
    expect(chat.error).toBeUndefined();
    // the re-run deleted a.txt again, which was back for it: turn 1's checkpoint was restored first
    expect(textOf(chat.messages.at(-1))).toBe("answer 3: {}");
    const thread = await stored("t-regen");
    expect(thread.messages.map((message) => message.id)).toEqual(chat.messages.map((message) => message.id));
    expect(thread.messages.map((message) => message.id)).not.toContain(old.id);
    expect(thread.messages).toHaveLength(4);
    // the history says what happened: a rewind to turn 1's answer that dropped two messages, then the new run
    const rewinds = thread.runs.filter((run) => run.rewind);
    expect(rewinds).toEqual([
      expect.objectContaining({
        status: "completed",
        rewind: { kind: "rewind", toMessageId: chat.messages[1]!.id, droppedCount: 2, stoppedProcesses: [] },
      }),
    ]);
    expect(thread.runs.at(-1)).toMatchObject({ status: "completed" });
    expect(thread.runs.at(-1)?.rewind).toBeUndefined();

    // regenerating the first answer goes back to before the first message: an empty box, then a.txt again
    await chat.regenerate({ messageId: chat.messages[1]!.id });
    expect(chat.error).toBeUndefined();
    expect(chat.messages).toHaveLength(2);
    expect(textOf(chat.messages[1])).toBe('answer 4: {"a.txt":"one"}');
    expect(boxOf("t-regen")).toEqual({ "a.txt": "one" });
    expect((await stored("t-regen")).messages.map((message) => message.id)).toEqual(
      chat.messages.map((message) => message.id),
    );
  });

  it("regenerates the last answer when no messageId is given", async () => {
    const chat = await twoTurns("t-regen-last");
    const old = chat.messages.at(-1)!.id;
    await chat.regenerate();
    expect(chat.error).toBeUndefined();
    expect(chat.messages).toHaveLength(4);
    expect(chat.messages.at(-1)!.id).not.toBe(old);
    expect((await stored("t-regen-last")).messages.map((message) => message.id)).toEqual(
      chat.messages.map((message) => message.id),
    );
  });

  it("edits an earlier message: it is replaced in place (same id), what followed is dropped, the files rewound", async () => {
    const chat = await twoTurns("t-edit");
    const first = chat.messages[0]!;
    await chat.sendMessage({ text: "write b.txt=two", messageId: first.id });
    expect(chat.error).toBeUndefined();
    expect(chat.messages.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(chat.messages[0]!.id).toBe(first.id);
    expect(textOf(chat.messages[1])).toBe('answer 3: {"b.txt":"two"}');
    // a.txt was never written in this history
    expect(boxOf("t-edit")).toEqual({ "b.txt": "two" });
    const thread = await stored("t-edit");
    expect(thread.messages.map((message) => message.id)).toEqual(chat.messages.map((message) => message.id));
    expect(textOf(thread.messages[0])).toBe("write b.txt=two");
  });

  it("refuses a message the thread does not have, an answer as an edit, and another identity", async () => {
    await twoTurns("t-refuse");
    const stale = await post("/chat", {
      id: "t-refuse",
      messages: [],
      trigger: "regenerate-message",
      messageId: "gone",
    });
    expect(stale.status).toBe(404);
    expect((await stale.json()).error.code).toBe("UNKNOWN_MESSAGE");
    const staleEdit = await post("/chat", {
      id: "t-refuse",
      messages: [{ id: "gone", role: "user", parts: [{ type: "text", text: "hi" }] }],
      trigger: "submit-message",
      messageId: "gone",
    });
    expect((await staleEdit.json()).error.code).toBe("UNKNOWN_MESSAGE");
    const { messages } = await stored("t-refuse");
    const foreign = await post(
      "/chat",
      { id: "t-refuse", messages: [], trigger: "regenerate-message", messageId: messages[1]!.id },
      "mallory",
    );
    expect(foreign.status).toBe(404);
    expect((await foreign.json()).error.code).toBe("NOT_FOUND");
    const editAnswer = await post("/chat", {
      id: "t-refuse",
      messages: [{ id: messages[1]!.id, role: "user", parts: [{ type: "text", text: "hi" }] }],
      trigger: "submit-message",
      messageId: messages[1]!.id,
    });
    expect(editAnswer.status).toBe(400);
    expect((await editAnswer.json()).error.code).toBe("INVALID_ARGUMENT");
    // nothing changed
    expect((await stored("t-refuse")).messages.map((message) => message.id)).toEqual(
      messages.map((message) => message.id),
    );
  });
});

describe("POST /threads/:threadId/fork", () => {
  it("forks at a message for the caller: the history and files of then, the original untouched", async () => {
    const chat = await twoTurns("t-fork");
    const at = chat.messages[1]!.id;
    const response = await post("/threads/t-fork/fork", { atMessageId: at });
    expect(response.status).toBe(201);
    const fork = (await response.json()) as { threadId: string; forkedFrom: unknown };
    expect(fork.forkedFrom).toEqual({ threadId: "t-fork", messageId: at });
    expect((await stored(fork.threadId)).messages.map((message) => message.id)).toEqual([
      chat.messages[0]!.id,
      at,
    ]);
    expect(boxOf(fork.threadId)).toEqual({ "a.txt": "one" });
    expect(boxOf("t-fork")).toEqual({});
    expect((await stored(fork.threadId)).runs.map((run) => run.rewind)).toEqual([
      { kind: "fork", toMessageId: at, droppedCount: 2, forkedFrom: "t-fork", stoppedProcesses: [] },
    ]);
    expect((await stored("t-fork")).messages).toHaveLength(4);
    // the fork goes on as a chat of its own
    const forked = chatFor(fork.threadId);
    await forked.sendMessage({ text: "write c.txt=three" });
    expect(boxOf(fork.threadId)).toEqual({ "a.txt": "one", "c.txt": "three" });
    expect(boxOf("t-fork")).toEqual({});

    const foreign = await post("/threads/t-fork/fork", {}, "mallory");
    expect(foreign.status).toBe(404);
    const unknown = await post("/threads/t-fork/fork", { atMessageId: "gone" });
    expect((await unknown.json()).error.code).toBe("UNKNOWN_MESSAGE");
  });
});
