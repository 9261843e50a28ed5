// An approval on an MCP tool through plain `useChat` (the AI SDK's `Chat`, what `useChat` runs on): the call waits
// for `addToolApprovalResponse`, reaches the MCP server only once approved, and never when denied.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { LanguageModelV4CallOptions } from "@ai-sdk/provider";
import { Chat } from "@ai-sdk/react";
import {
  createAgentRuntime,
  createMemoryThreadStore,
  createPai,
  createPaiHandler,
  defineAgent,
  toNodeListener,
} from "@pai/core";
import { lastMessageOnly } from "@pai/core/client";
import { createScriptedModel, type ScriptedStep } from "@pai/core/testing";
import { mcpTools } from "@pai/mcp";
import {
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  type UIMessage,
} from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHttpTestServer } from "./fixtures/mcp-test-server.ts";

/** Calls `calc_add` for the user's message, then says what came back. */
function nextStep(call: LanguageModelV4CallOptions): ScriptedStep {
  const results = call.prompt.flatMap((message) => (message.role === "tool" ? message.content : []));
  const last = results.findLast((part) => part.type === "tool-result");
  if (!last) return { toolCalls: [{ toolName: "calc_add", input: { a: 2, b: 3 } }] };
  const output = last.output as { type: string; value?: unknown; reason?: string };
  return { text: output.type === "json" ? `Sum: ${JSON.stringify(output.value)}` : `No: ${output.type}` };
}

let mcp: Awaited<ReturnType<typeof startHttpTestServer>>;
let url: string;
let close: () => Promise<void>;
const approvals: unknown[] = [];

beforeAll(async () => {
  mcp = await startHttpTestServer();
  const calc = mcpTools(
    { url: mcp.url },
    {
      name: "calc",
      requireApproval: (call) => {
        approvals.push(call);
        return call.tool === "add";
      },
    },
  );
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { ops: defineAgent({ tools: { calc } }) } }),
    store: createMemoryThreadStore(),
    model: createScriptedModel({ steps: [], fallback: nextStep }),
  });
  const server = createServer(toNodeListener(createPaiHandler({ runtime, authenticate: () => ({}) })));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await runtime.close();
    await calc.close();
    await mcp.close();
  };
});

afterAll(() => close());

function chatFor(threadId: string) {
  return new Chat<UIMessage>({
    id: threadId,
    transport: new DefaultChatTransport({
      api: `${url}/api/chat`,
      prepareSendMessagesRequest: lastMessageOnly,
    }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
}

type ToolPart = { type: string; state: string; output?: unknown; approval?: { id: string } };

function addPart(chat: Chat<UIMessage>): ToolPart {
  const part = chat.messages.flatMap((message) => message.parts).findLast((p) => p.type === "tool-calc_add");
  if (!part) throw new Error(`no tool-calc_add part in ${JSON.stringify(chat.messages)}`);
  return part as unknown as ToolPart;
}

function lastText(chat: Chat<UIMessage>): string {
  const last = chat.messages.at(-1);
  return last?.parts.map((part) => (part.type === "text" ? part.text : "")).join("") ?? "";
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("an MCP tool that requires approval, through useChat", () => {
  it("waits for addToolApprovalResponse, then calls the server once and the model goes on", async () => {
    const chat = chatFor("t-mcp-approve");
    await chat.sendMessage({ text: "add them" });
    const asked = addPart(chat);
    expect(asked.state).toBe("approval-requested");
    expect(approvals).toContainEqual({ tool: "add", input: { a: 2, b: 3 } });
    expect(mcp.calls).toEqual([]);

    await chat.addToolApprovalResponse({ id: asked.approval!.id, approved: true });
    await until(() => chat.status === "ready" && lastText(chat).startsWith("Sum"), "the reply");
    expect(addPart(chat)).toMatchObject({
      state: "output-available",
      output: { structuredContent: { sum: 5 } },
    });
    expect(lastText(chat)).toBe('Sum: {"sum":5}');
    expect(chat.error).toBeUndefined();
    expect(mcp.calls).toEqual(["add"]);
  });

  it("never calls the server for a denied call", async () => {
    const before = mcp.calls.length;
    const chat = chatFor("t-mcp-deny");
    await chat.sendMessage({ text: "add them" });
    const asked = addPart(chat);
    await chat.addToolApprovalResponse({ id: asked.approval!.id, approved: false, reason: "no" });
    await until(() => chat.status === "ready" && lastText(chat).startsWith("No"), "the reply");
    expect(lastText(chat)).toBe("No: execution-denied");
    expect(addPart(chat).state).toBe("output-denied");
    expect(mcp.calls.length).toBe(before);
  });
});
