// A plain-JavaScript app, as a user writes one after `npm install @pai/core @pai/sandbox zod ai`: no loader, no
// TypeScript. It runs a sandbox tool and the code interpreter (whose drivers the package ships) with PAI's scripted
// model and prints what the tools answered as JSON.
// Usage: node run-sandbox-tool.mjs <pool id>
import { createAgentRuntime, createMemoryThreadStore, createPai, defineAgent, defineTool } from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { defineCodeInterpreterTool, dockerSandbox, sandbox } from "@pai/sandbox";
import { z } from "zod";

const [poolId] = process.argv.slice(2);
if (!poolId) throw new Error("usage: node run-sandbox-tool.mjs <pool id>");

const runScript = defineTool({
  id: "runScript",
  description: "Run a command in this conversation's sandbox.",
  inputSchema: z.object({ command: z.string() }),
  capabilities: { sandbox },
  execute: (ctx) => ctx.capabilities.sandbox.runCommand({ command: ctx.input.command, signal: ctx.signal }),
});

const interpreter = defineCodeInterpreterTool({ languages: ["python"] });
const pai = createPai({ agents: { coder: defineAgent({ tools: { runScript, interpreter } }) } });
const runtime = createAgentRuntime({
  pai,
  store: createMemoryThreadStore(),
  model: createScriptedModel({
    steps: [
      {
        toolCalls: [{ toolName: "runScript", input: { command: "echo hello from $(uname -m); id -u; pwd" } }],
      },
      { toolCalls: [{ toolName: "interpreter", input: { code: "x = 21\nx * 2" } }] },
      { text: "done" },
    ],
  }),
  capabilities: { sandbox: dockerSandbox({ poolId, pool: { min: 0, max: 1 } }) },
});
try {
  const run = await runtime.run({ agentId: "coder", identity: { userId: "u1" }, message: "say hello" });
  for await (const _chunk of run.stream);
  const { status, threadId } = await run.done;
  const thread = await runtime.getThread(threadId);
  const parts = (thread?.messages ?? []).flatMap((message) => message.parts);
  const call = parts.find((part) => part.type === "tool-runScript");
  const interpreted = parts.find((part) => part.type === "tool-interpreter");
  console.log(
    JSON.stringify({
      status,
      state: call?.state,
      output: call?.output,
      interpreted: interpreted?.output,
      node: process.version,
    }),
  );
} finally {
  await runtime.close();
}
