// The README's first tool, typed: a sandbox tool, its agent and a runtime bound to Docker.
import { createAgentRuntime, createPai, defineAgent, defineTool } from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { dockerSandbox, sandbox } from "@pai/sandbox";
import { defineCodeModeTool } from "@pai/sandbox/code-mode";
import { z } from "zod";

export const runScript = defineTool({
  id: "runScript",
  description: "Run a command in this conversation's sandbox.",
  inputSchema: z.object({ command: z.string() }),
  capabilities: { sandbox },
  execute: (ctx) => ctx.capabilities.sandbox.runCommand({ command: ctx.input.command, signal: ctx.signal }),
});

export const agent = defineAgent({
  identity: z.object({ userId: z.string() }),
  runtimeContext: async ({ identity }) => ({ userId: identity.userId }),
  tools: { runScript, code: defineCodeModeTool({ tools: { runScript } }) },
});

export const pai = createPai({ agents: { coder: agent } });

export const runtime = createAgentRuntime({
  pai,
  model: createScriptedModel({ steps: [{ text: "hello" }] }),
  capabilities: { sandbox: dockerSandbox({ pool: { min: 0, max: 2 } }) },
});

export async function hello(): Promise<string> {
  const run = await runtime.run({ agentId: "coder", identity: { userId: "u1" }, message: "hi" });
  const { status } = await run.done;
  return status;
}
