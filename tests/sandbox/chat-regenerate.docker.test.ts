// Regenerate from plain `useChat` (the AI SDK's `Chat`) against a real sandbox (issue 25): the thread is rewound
// with its /workspace (checkpoints on by default: threads in memory checkpoint into a temporary folder) and the programs the dropped turn left
// running are stopped, before the user message runs again — as the re-run's own command sees it in the container.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Chat } from "@ai-sdk/react";
import {
  type AgentRuntime,
  createAgentRuntime,
  createMemoryThreadStore,
  createPai,
  createPaiHandler,
  defineAgent,
  defineTool,
  toNodeListener,
} from "@pai/core";
import { lastMessageOnly } from "@pai/core/client";
import { createScriptedModel } from "@pai/core/testing";
import { type DockerSandboxBinding, dockerSandbox, sandbox } from "@pai/sandbox";
import { DefaultChatTransport, type UIMessage } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  dockerOptedOut,
  poolContainers,
  removePoolContainers,
  sandboxImage,
  uniquePoolId,
} from "./docker-helpers.ts";

/** Runs the user's message as a shell command line in the thread's sandbox. */
const sh = defineTool({
  id: "sh",
  description: "runs a command line",
  inputSchema: z.object({ command: z.string() }),
  capabilities: { sandbox },
  execute: async (ctx) => {
    const result = await ctx.capabilities.sandbox.runCommand({ command: ctx.input.command });
    return { stdout: result.stdout, exitCode: result.exitCode };
  },
});

/** The model runs each user message with `sh`, then answers with what it printed. */
const model = createScriptedModel({
  steps: [],
  fallback: (call) => {
    const last = call.prompt.at(-1);
    if (last?.role === "tool") {
      const result = last.content.find((part) => part.type === "tool-result");
      const output = result?.output as { value?: { stdout?: string } } | undefined;
      return { text: output?.value?.stdout ?? JSON.stringify(result?.output) };
    }
    const text =
      last?.role === "user" ? last.content.map((p) => (p.type === "text" ? p.text : "")).join("") : "";
    return { toolCalls: [{ toolName: "sh", input: { command: text } }] };
  },
});

/**
 * How many `sleep 4242` run in the sandbox (zombies have no command line), then a.txt; then a.txt is deleted and one
 * more sleep left running in a session of its own (waited for: the command's group is killed when it ends).
 */
const turnTwo =
  "echo sleeping=$(for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c '^sleep 4242'); " +
  "echo a=$(cat a.txt 2>&1); rm -f a.txt; setsid nohup sleep 4242 >/dev/null 2>&1 < /dev/null & " +
  'until [ "$(cut -d\' \' -f6 /proc/$!/stat)" = "$!" ]; do sleep 0.01; done';

describe.skipIf(dockerOptedOut)("regenerate from useChat on a real sandbox", () => {
  const poolId = uniquePoolId("chat-regenerate");
  let binding: DockerSandboxBinding;
  let runtime: AgentRuntime;
  let server: Server;
  let url: string;

  beforeAll(async () => {
    binding = dockerSandbox({ image: sandboxImage, poolId, pool: { min: 0, max: 2 } });
    runtime = createAgentRuntime({
      pai: createPai({
        agents: { a: defineAgent({ identity: z.object({ userId: z.string() }), tools: { sh } }) },
      }),
      store: createMemoryThreadStore(),
      model,
      capabilities: { sandbox: binding },
    });
    const handler = createPaiHandler({
      runtime,
      authenticate: (request) => {
        const user = request.headers.get("x-user");
        return user ? { userId: user } : null;
      },
    });
    server = createServer(toNodeListener(handler));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 120_000);

  afterAll(async () => {
    try {
      const closed = new Promise<void>((resolve) => server?.close(() => resolve()));
      server?.closeAllConnections();
      await runtime?.close();
      await closed;
      expect(await poolContainers(poolId)).toEqual([]);
    } finally {
      await removePoolContainers(poolId);
    }
  });

  it("restores the file turn 2 deleted and stops what turn 2 left running, before turn 2 runs again", async () => {
    const chat = new Chat<UIMessage>({
      id: "regenerate-real",
      transport: new DefaultChatTransport({
        api: `${url}/api/chat`,
        headers: { "x-user": "alice" },
        prepareSendMessagesRequest: lastMessageOnly,
      }),
    });
    const text = (message: UIMessage | undefined) =>
      (message?.parts ?? []).map((part) => (part.type === "text" ? part.text : "")).join("");

    await chat.sendMessage({ text: "echo one > a.txt && echo wrote" });
    expect(text(chat.messages.at(-1))).toBe("wrote\n");
    await chat.sendMessage({ text: turnTwo });
    expect(text(chat.messages.at(-1))).toBe("sleeping=0\na=one\n");
    const old = chat.messages.at(-1)!;

    await chat.regenerate({ messageId: old.id });
    expect(chat.error).toBeUndefined();
    // a.txt was back and the first sleep gone when the command ran again
    expect(text(chat.messages.at(-1))).toBe("sleeping=0\na=one\n");
    expect(chat.messages.at(-1)!.id).not.toBe(old.id);

    const response = await fetch(`${url}/api/threads/regenerate-real`, { headers: { "x-user": "alice" } });
    const thread = (await response.json()) as {
      messages: UIMessage[];
      runs: Array<{ rewind?: { stoppedProcesses: Array<{ command: string }> } }>;
    };
    expect(thread.messages.map((message) => message.id)).toEqual(chat.messages.map((message) => message.id));
    // the thread's history names what the rewind stopped
    const rewind = thread.runs.find((run) => run.rewind)?.rewind;
    expect(rewind?.stoppedProcesses.map((process) => process.command)).toEqual(["sleep 4242"]);
  }, 120_000);
});
