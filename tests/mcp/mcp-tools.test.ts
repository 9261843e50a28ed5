// mcpTools against a real MCP server (tests/mcp/fixtures/mcp-test-server.ts, on the official SDK): over streamable
// HTTP on 127.0.0.1 and over stdio on the host, driven by PAI's runtime with a scripted model.
import { fileURLToPath } from "node:url";
import type { LanguageModelV4CallOptions } from "@ai-sdk/provider";
import { createAgentRuntime, createMemoryThreadStore, createPai, defineAgent } from "@pai/core";
import { createScriptedModel, type ScriptedStep } from "@pai/core/testing";
import { McpError, type McpToolSet, mcpTools } from "@pai/mcp";
import type { UIMessage } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PIXEL_PNG, startHttpTestServer } from "./fixtures/mcp-test-server.ts";

const serverFile = fileURLToPath(new URL("./fixtures/mcp-test-server.ts", import.meta.url));
const stdioServer = { command: process.execPath, args: [serverFile, "--stdio"] };

type ToolPart = { type: string; state: string; output?: unknown; errorText?: string; toolMetadata?: unknown };

function toolParts(messages: UIMessage[]): ToolPart[] {
  return messages
    .flatMap((message) => message.parts)
    .filter((part) => part.type.startsWith("tool-")) as never;
}

function namesOf(call: LanguageModelV4CallOptions): string[] {
  return (call.tools ?? []).map((tool) => tool.name).sort();
}

/** Runs one message on an agent with `set` registered as `key`; the model makes `calls`, one step each. */
async function play(set: McpToolSet, calls: Array<{ toolName: string; input: unknown }>, key = "test") {
  const steps: ScriptedStep[] = [...calls.map((call) => ({ toolCalls: [call] })), { text: "done" }];
  const model = createScriptedModel({ steps });
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { helper: defineAgent({ tools: { [key]: set } }) } }),
    store: createMemoryThreadStore(),
    model,
  });
  try {
    const result = await (await runtime.run({ agentId: "helper", message: "go" })).done;
    return { result, parts: toolParts(result.messages), model };
  } finally {
    await runtime.close();
  }
}

describe("mcpTools over streamable HTTP on 127.0.0.1", () => {
  let http: Awaited<ReturnType<typeof startHttpTestServer>>;
  let set: McpToolSet;
  beforeAll(async () => {
    http = await startHttpTestServer();
    set = mcpTools({ url: http.url }, { name: "calc" });
  });
  afterAll(async () => {
    await set.close();
    await http.close();
  });

  it("offers the server's tools under the registration key with their JSON Schemas, and maps results", async () => {
    const { result, parts, model } = await play(set, [
      { toolName: "test_add", input: { a: 2, b: 3 } },
      { toolName: "test_image", input: {} },
      { toolName: "test_fail", input: {} },
    ]);
    expect(result.status).toBe("completed");
    expect(namesOf(model.doStreamCalls[0]!)).toEqual(
      ["add", "exit", "fail", "flood", "garbage", "hang", "image", "learn", "pid"].map(
        (name) => `test_${name}`,
      ),
    );
    const add = model.doStreamCalls[0]!.tools!.find((tool) => tool.name === "test_add") as {
      inputSchema: { properties: object; required: string[] };
    };
    expect(add.inputSchema).toMatchObject({
      properties: { a: { type: "number" }, b: { type: "number" } },
      required: ["a", "b"],
    });
    expect(parts[0]).toMatchObject({
      state: "output-available",
      output: { structuredContent: { sum: 5 } },
      toolMetadata: { paiToolId: "mcp.calc.add" },
    });
    expect(parts[1]).toMatchObject({
      state: "output-available",
      output: {
        content: [
          { type: "text", text: "one pixel" },
          { type: "image", data: PIXEL_PNG, mimeType: "image/png" },
        ],
      },
    });
    expect(parts[2]).toMatchObject({ state: "output-error", errorText: "the widget is broken" });
    // what the model read: structured content as JSON, the image as a file part, the failure as an error
    const prompt = JSON.stringify(model.doStreamCalls[3]!.prompt);
    expect(prompt).toContain('"value":{"sum":5}');
    expect(prompt).toContain('"mediaType":"image/png"');
    expect(prompt).toContain("the widget is broken");
    expect(http.sessions()).toBe(1);
  });

  it("fails a call the server cannot be reached for with MCP_CONNECT_FAILED, and the set keeps working", async () => {
    const down = mcpTools({ url: "http://127.0.0.1:9/mcp" }, { connectTimeoutMs: 2000 });
    const error = await down
      .tools({ key: "down", threadId: "t", signal: new AbortController().signal })
      .catch((caught: unknown) => caught);
    expect(McpError.hasCode(error, "MCP_CONNECT_FAILED")).toBe(true);
    await down.close();
  });

  it("is listed among the agent's tool sources in the manifest, by its server's name, without connecting", () => {
    const described = mcpTools({ url: http.url }, { name: "calc", description: "Adds numbers" });
    const plain = mcpTools({ url: http.url });
    const sessions = http.sessions();
    const manifest = createPai({
      agents: { helper: defineAgent({ tools: { math: described, other: plain } }) },
    }).manifest();
    expect(manifest.agents[0]?.toolSources).toEqual([
      { key: "math", name: "calc", description: "Adds numbers", capabilities: [] },
      {
        key: "other",
        name: plain.name,
        description: `The tools of the MCP server "${plain.name}"`,
        capabilities: [],
      },
    ]);
    expect(http.sessions()).toBe(sessions);
  });

  it("refuses a server description that is neither a URL nor a command", () => {
    expect(() => mcpTools({} as never)).toThrow(McpError);
    expect(() => mcpTools({ sandbox: { command: "node" } } as never)).toThrow(/@pai\/mcp\/sandbox/);
  });
});

describe("mcpTools over stdio on the host", () => {
  it("offers a tool the server adds during a run (tools/list_changed) from the next step", async () => {
    await using set = mcpTools(stdioServer);
    const { result, parts, model } = await play(
      set,
      [
        { toolName: "srv_learn", input: {} },
        { toolName: "srv_added", input: { word: "hello" } },
      ],
      "srv",
    );
    expect(result.status).toBe("completed");
    expect(namesOf(model.doStreamCalls[0]!)).not.toContain("srv_added");
    expect(namesOf(model.doStreamCalls[1]!)).toContain("srv_added");
    expect(parts[1]).toMatchObject({
      state: "output-available",
      output: { content: [{ type: "text", text: "added says hello" }] },
      toolMetadata: { paiToolId: "mcp.mcp-test-server.added" },
    });
  });

  it("fails the calls of a hostile server with clear codes, and starts it again for the next call", async () => {
    await using set = mcpTools(stdioServer, { timeoutMs: 1500, maxLineBytes: 64 * 1024 });
    const { parts } = await play(
      set,
      [
        { toolName: "h_pid", input: {} },
        { toolName: "h_hang", input: {} },
        { toolName: "h_flood", input: { bytes: 200_000 } },
        { toolName: "h_pid", input: {} },
        { toolName: "h_garbage", input: {} },
        { toolName: "h_exit", input: {} },
        { toolName: "h_pid", input: {} },
      ],
      "h",
    );
    const pid = (part: ToolPart) => (part.output as { content: Array<{ text: string }> }).content[0]!.text;
    expect(parts.map((part) => part.state)).toEqual([
      "output-available",
      "output-error",
      "output-error",
      "output-available",
      "output-error",
      "output-error",
      "output-available",
    ]);
    expect(parts[1]!.errorText).toMatch(/did not answer within 1500 ms/);
    expect(parts[2]!.errorText).toMatch(/broke the protocol: .*ReadBuffer exceeded/);
    expect(parts[4]!.errorText).toMatch(/broke the protocol/);
    expect(parts[5]!.errorText).toMatch(/went away.*exiting on purpose/);
    // a new process after each fault that ended one
    const pids = [pid(parts[0]!), pid(parts[3]!), pid(parts[6]!)];
    expect(new Set(pids).size).toBe(3);
    for (const id of pids.slice(0, 2)) expect(() => process.kill(Number(id), 0)).toThrow();
  });
});
