// A stdio MCP server inside the conversation's sandbox (`@pai/mcp/sandbox`), on the real engine: the repo's test
// server (tests/mcp/fixtures/mcp-test-server.ts, on the official SDK) bundled into one file with rolldown — the
// sandbox image has Node (Debian's, 18) but not the SDK — written into the thread's sandbox by a tool, and started
// there through the container agent, one process per thread. Its faults fail only its own calls.
import { fileURLToPath } from "node:url";
import { createAgentRuntime, createMemoryThreadStore, createPai, defineAgent, defineTool } from "@pai/core";
import { createScriptedModel, type ScriptedStep } from "@pai/core/testing";
import { mcpTools } from "@pai/mcp/sandbox";
import { dockerSandbox, sandbox } from "@pai/sandbox";
import type { UIMessage } from "ai";
import { build } from "rolldown";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { dockerOptedOut, poolContainers, sandboxImage, uniquePoolId } from "./docker-helpers.ts";

const serverFile = fileURLToPath(new URL("../mcp/fixtures/mcp-test-server.ts", import.meta.url));
const poolId = uniquePoolId("mcp");
let bundle = "";

/** Writes the bundled server into the thread's sandbox. */
const install = defineTool({
  id: "install",
  description: "Install the MCP server",
  inputSchema: z.object({}),
  capabilities: { sandbox },
  execute: async (ctx) => {
    await ctx.capabilities.sandbox.writeFiles([{ path: ".mcp/server.mjs", content: bundle }]);
    return { installed: true };
  },
});
/** The node processes running in the thread's sandbox. */
const processes = defineTool({
  id: "processes",
  description: "List node processes",
  inputSchema: z.object({}),
  capabilities: { sandbox },
  execute: async (ctx) => {
    const { stdout } = await ctx.capabilities.sandbox.runCommand({
      command: "ps -eo pid,args | grep [s]erver.mjs",
    });
    return { lines: stdout.trim().split("\n") };
  },
});

const box = mcpTools(
  { sandbox: { command: "node", args: ["/workspace/.mcp/server.mjs", "--stdio"] } },
  { name: "box", timeoutMs: 3000, maxLineBytes: 64 * 1024, connectTimeoutMs: 10_000 },
);

type ToolPart = { type: string; state: string; output?: unknown; errorText?: string };
const call = (toolName: string, input: unknown = {}): ScriptedStep => ({ toolCalls: [{ toolName, input }] });
const pidOf = (part: ToolPart) => (part.output as { content: Array<{ text: string }> }).content[0]!.text;

let runtime: ReturnType<typeof createAgentRuntime>;
let nextModelSteps: ScriptedStep[] = [];

beforeAll(async () => {
  const out = await build({ input: serverFile, platform: "node", write: false, output: { format: "esm" } });
  bundle = out.output[0].code;
  runtime = createAgentRuntime({
    pai: createPai({ agents: { agent: defineAgent({ tools: { install, processes, box } }) } }),
    store: createMemoryThreadStore(),
    model: createScriptedModel({ steps: [], fallback: () => nextModelSteps.shift() ?? { text: "done" } }),
    capabilities: { sandbox: dockerSandbox({ image: sandboxImage, poolId, pool: { min: 1, max: 3 } }) },
  });
});

afterAll(async () => {
  await runtime?.close();
  await box.close();
  expect(await poolContainers(poolId)).toEqual([]);
});

/** Plays `steps` through the runtime's scripted model as one message on `threadId`. */
async function turn(threadId: string, steps: ScriptedStep[]): Promise<ToolPart[]> {
  nextModelSteps = [...steps];
  const result = await (await runtime.run({ agentId: "agent", threadId, message: "go" })).done;
  expect(result.status).toBe("completed");
  return (result.messages.at(-1) as UIMessage).parts.filter((part) => part.type.startsWith("tool-")) as never;
}

describe.skipIf(dockerOptedOut)("an MCP server inside the thread's sandbox", () => {
  it("starts it in the sandbox, one process per thread kept across runs, and its faults fail only its calls", async () => {
    // the run lists the server's tools before it is installed: none yet, the next step has them
    const first = await turn("t1", [
      call("install"),
      call("box_add", { a: 2, b: 3 }),
      call("box_pid"),
      call("processes"),
    ]);
    expect(first.map((part) => [part.state, part.errorText])).toEqual(
      Array(4).fill(["output-available", undefined]),
    );
    expect(first[1]!.output).toMatchObject({ structuredContent: { sum: 5 } });
    const pid = pidOf(first[2]!);
    const lines = (first[3]!.output as { lines: string[] }).lines;
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^\\s*${pid} node /workspace/.mcp/server.mjs --stdio$`));

    // a second run of the thread uses the same process; another thread gets its own, in its own sandbox
    const again = await turn("t1", [call("box_pid")]);
    expect(pidOf(again[0]!)).toBe(pid);
    const other = await turn("t2", [call("install"), call("box_pid"), call("processes")]);
    expect(other.map((part) => part.state)).toEqual(Array(3).fill("output-available"));
    expect((other[2]!.output as { lines: string[] }).lines).toHaveLength(1);

    // the faults of a hostile server: each fails its call with a clear error, and the next call works
    const faults = await turn("t1", [
      call("box_hang"),
      call("box_flood", { bytes: 200_000 }),
      call("box_pid"),
      call("box_garbage"),
      call("box_exit"),
      call("box_pid"),
      call("processes"),
    ]);
    expect(faults.map((part) => part.state)).toEqual([
      "output-error",
      "output-error",
      "output-available",
      "output-error",
      "output-error",
      "output-available",
      "output-available",
    ]);
    expect(faults[0]!.errorText).toMatch(/did not answer within 3000 ms/);
    expect(faults[1]!.errorText).toMatch(/broke the protocol: the mcp server wrote a line over 65536 bytes/);
    expect(faults[3]!.errorText).toMatch(
      /broke the protocol: the mcp server wrote a line that is not JSON-RPC/,
    );
    expect(faults[4]!.errorText).toMatch(/went away.*exit code 3.*exiting on purpose/);
    // the killed and exited servers are gone: one process, the last one started
    expect((faults[6]!.output as { lines: string[] }).lines).toEqual([
      expect.stringMatching(new RegExp(`^\\s*${pidOf(faults[5]!)} node`)),
    ]);

    // the other thread's server never noticed
    const still = await turn("t2", [call("box_add", { a: 1, b: 1 })]);
    expect(still[0]!.output).toMatchObject({ structuredContent: { sum: 2 } });
  });
});
