import { mkdtemp, rm } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CapabilityBinding, PublicPendingAction } from "@pai/core";
import { answerAction, followRunStream, pendingActionsOf, toolDataOf } from "@pai/react";
import type { CommandResult, RunCommandOptions, SandboxFacade } from "@pai/sandbox";
import type { UIMessage } from "ai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { selectModel } from "../select-model.ts";
import { type ChatServer, createChatServer } from "./create-chat-server.ts";

/** A sandbox binding without Docker: records files and commands, and prints what the plan's commands would. */
function fakeSandbox() {
  const files = new Map<string, string>();
  const commands: string[] = [];
  const facade = {
    async writeFiles(entries: readonly { path: string; content: string | Uint8Array }[]) {
      for (const entry of entries) files.set(entry.path, String(entry.content));
    },
    async runCommand(options: RunCommandOptions): Promise<CommandResult> {
      commands.push(options.command);
      const stdout = options.command.includes("git") ? "abc1234 Add fib.py\n" : "fib(0) = 0\nfib(1) = 1\n";
      for (const line of stdout.split(/(?<=\n)/)) options.onStdout?.(line);
      return { exitCode: 0, stdout, stderr: "", durationMs: 5, terminationReason: "exit" } as CommandResult;
    },
  } as unknown as SandboxFacade;
  const binding: CapabilityBinding<SandboxFacade> = {
    kind: "pai.capability-binding",
    capability: "sandbox",
    provision: async () => ({ facade, resourceId: "fake", release: async () => {} }),
    close: async () => {},
  };
  return { binding, files, commands };
}

let dir: string;
let server: ChatServer;
let sandbox: ReturnType<typeof fakeSandbox>;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "pai-chat-"));
  sandbox = fakeSandbox();
  server = await createChatServer({
    buildPage: false,
    dbPath: join(dir, "chat.db"),
    sandbox: sandbox.binding,
    model: selectModel({}),
  });
});

afterEach(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

async function send(threadId: string, text: string): Promise<UIMessage> {
  const response = await fetch(`${server.url}/api/chat`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      id: threadId,
      messages: [{ id: `u-${text}`, role: "user", parts: [{ type: "text", text }] }],
    }),
  });
  expect(response.status).toBe(200);
  const message = await followRunStream({ stream: response.body!, messages: [], onMessage: () => {} });
  return message!;
}

async function answer(message: UIMessage, type: "approve" | "deny"): Promise<UIMessage> {
  const action = pendingActionsOf(message).find(
    (candidate) => candidate.status === "pending",
  ) as PublicPendingAction;
  const result = await answerAction({
    api: `${server.url}/api`,
    action,
    answer:
      type === "approve" ? { type: "resume", resume: { approved: true } } : { type: "deny", reason: "no" },
    stream: true,
  });
  const final = await followRunStream({ stream: result.stream!, messages: [message], onMessage: () => {} });
  return final!;
}

describe("chat server with the scripted plan", () => {
  it("runs the script, streams its output, and commits after approval", async () => {
    const first = await send("t1", "hello");
    const text = first.parts.flatMap((part) => (part.type === "text" ? [part.text] : [])).join(" ");
    expect(text).toContain("scripted demo model");
    const run = first.parts.find((part) => part.type === "tool-runScript") as {
      toolCallId: string;
      state: string;
    };
    expect(run.state).toBe("output-available");
    expect(toolDataOf(first, run.toolCallId).map((item) => item.value)).toEqual([
      "$ python3 fib.py\n",
      "fib(0) = 0\n",
      "fib(1) = 1\n",
    ]);
    expect(sandbox.files.get("fib.py")).toContain("def fib");
    expect(first.parts.find((part) => part.type === "tool-commitWork")).toMatchObject({
      state: "approval-requested",
    });

    const final = await answer(first, "approve");
    expect(final.parts.find((part) => part.type === "tool-commitWork")).toMatchObject({
      state: "output-available",
      output: { commit: "abc1234", files: ["fib.py"] },
    });
    expect(final.parts.at(-1)).toMatchObject({
      type: "text",
      text: expect.stringContaining("Committed fib.py as abc1234"),
    });
    expect(sandbox.commands.at(-1)).toContain("git -c user.name=PAI");
  });

  it("tells the model about a denial and commits nothing", async () => {
    const final = await answer(await send("t2", "hello"), "deny");
    expect(final.parts.find((part) => part.type === "tool-commitWork")).toMatchObject({
      state: "output-denied",
    });
    expect(final.parts.at(-1)).toMatchObject({ text: expect.stringContaining("You denied the commit") });
    expect(sandbox.commands.some((command) => command.includes("git"))).toBe(false);
  });

  it("serves the page on its own host only: another Host (a preview's, a rebound name) gets PAI's handler", async () => {
    const { port } = new URL(server.url);
    const get = (host: string) =>
      new Promise<{ status: number; type: string }>((resolve, reject) => {
        const req = request({ host: "127.0.0.1", port, path: "/", headers: { host } }, (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0, type: String(res.headers["content-type"]) });
        });
        req.once("error", reject);
        req.end();
      });
    for (const own of [`127.0.0.1:${port}`, `localhost:${port}`]) {
      expect(await get(own)).not.toMatchObject({ type: expect.stringContaining("application/json") });
    }
    for (const other of [`p1234.localhost:${port}`, `evil.example:${port}`]) {
      expect(await get(other)).toMatchObject({
        status: 404,
        type: expect.stringContaining("application/json"),
      });
    }
  });

  it("serves the thread to its owner only", async () => {
    await send("t3", "hello");
    expect((await fetch(`${server.url}/api/threads/t3`)).status).toBe(200);
    expect((await fetch(`${server.url}/api/threads/t3`, { headers: { "x-pai-user": "eve" } })).status).toBe(
      404,
    );
  });
});
