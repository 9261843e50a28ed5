import { createAgentRuntime, createMemoryThreadStore, createPai, defineAgent, defineTool } from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { type DockerSandboxBinding, sandbox } from "@pai/sandbox";
import { z } from "zod";

/**
 * A runtime whose agent, on each new message, calls one tool that touches `ctx.capabilities.sandbox` for the
 * first time in its thread and runs `true`; the tool reports how long that took (first access → command done).
 */
export function createFirstCommandRuntime(binding: DockerSandboxBinding) {
  const firstCommand = defineTool({
    id: "firstCommand",
    description: "Run `true` in this conversation's sandbox.",
    inputSchema: z.object({}),
    outputSchema: z.object({ ms: z.number(), exitCode: z.number() }),
    capabilities: { sandbox },
    execute: async (ctx) => {
      const startedAt = performance.now();
      const result = await ctx.capabilities.sandbox.runCommand({ command: "true", args: [] });
      return { ms: performance.now() - startedAt, exitCode: result.exitCode };
    },
  });
  const model = createScriptedModel({
    steps: [],
    fallback: (call) =>
      call.prompt.some((message) => message.role === "tool")
        ? { text: "done" }
        : { toolCalls: [{ toolName: "firstCommand", input: {} }] },
  });
  const pai = createPai({ agents: { box: defineAgent({ tools: { firstCommand }, maxSteps: 3 }) } });
  const runtime = createAgentRuntime({
    pai,
    store: createMemoryThreadStore(),
    model,
    capabilities: { sandbox: binding },
  });

  /** One new conversation: resolves to the tool's first-command time in ms (throws when it did not succeed). */
  async function converse(threadId: string): Promise<number> {
    const run = await runtime.run({ agentId: "box", threadId, message: "go" });
    let ms: number | undefined;
    let failure: string | undefined;
    for await (const chunk of run.stream as AsyncIterable<Record<string, unknown>>) {
      if (chunk.type === "tool-output-available") {
        const output = chunk.output as { ms?: number; exitCode?: number } | undefined;
        if (output?.exitCode === 0 && typeof output.ms === "number") ms = output.ms;
      } else if (chunk.type === "tool-output-error") {
        failure = String(chunk.errorText);
      }
    }
    const result = await run.done;
    if (ms === undefined) throw new Error(`conversation ${threadId}: ${failure ?? result.status}`);
    return ms;
  }

  return { runtime, converse };
}
