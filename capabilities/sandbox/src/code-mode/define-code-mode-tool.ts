import { type AnyToolDefinition, defineTool } from "@pai/core";
import { z } from "zod";
import { sandbox } from "../sandbox.ts";
import { runCodeModeProgram } from "./run-code-mode-program.ts";
import { toolSignatures } from "./tool-signatures.ts";

const outputSchema = z.object({
  result: z.unknown(),
  logs: z.string(),
  toolCalls: z.array(z.object({ tool: z.string(), ok: z.boolean() })),
});

/**
 * Code mode: one tool that lets the model write a JavaScript program over several tools instead of calling
 * them one step at a time. The program runs with `node` in this conversation's sandbox (no network, no host
 * access); each `await tools.<name>(input)` is executed by PAI on the server as a nested tool, through the same
 * pipeline as a top-level call (schemas, `enabled`, `afterToolResult`, the agent's `onOutput` for that tool).
 * Logs stream as `data-logs` parts.
 *
 * A tool that waits for a person (`ctx.suspend`) stops the program: the thread gets one pending action whose
 * path names the tool (`["codeMode", "refund"]`). Once it is answered the program runs again from its start;
 * the calls it made before are answered from the call's journal, in order, without running again, and the
 * waiting one resumes. A program that then calls something else fails with `JOURNAL_DIVERGED`; keep programs
 * deterministic up to their last tool call (no clock, randomness or sandbox state deciding which tools to call).
 * @example
 * const agent = defineAgent({ tools: { code: defineCodeModeTool({ tools: { searchDocs, createTask } }) } });
 */
export function defineCodeModeTool<CHILDREN extends Record<string, AnyToolDefinition>>(options: {
  tools: CHILDREN;
  /** @default "codeMode" */
  id?: string;
  description?: string;
  /** @default 60_000 */
  timeoutMs?: number;
}) {
  const timeoutMs = options.timeoutMs ?? 60_000;
  return defineTool({
    id: options.id ?? "codeMode",
    description: [
      options.description ??
        "Run a JavaScript program (the body of an async function, Node.js) in the sandbox. Call the functions below with `await`, combine their results in code, and `return` what you need. console.log output is returned as logs.",
      "",
      toolSignatures(options.tools),
    ].join("\n"),
    inputSchema: z.object({
      code: z
        .string()
        .describe("The body of an async function: `const x = await tools.name({...}); return x;`"),
    }),
    outputSchema,
    data: { logs: z.string() },
    capabilities: { sandbox },
    tools: options.tools,
    execute: async (ctx) => {
      const logWrites: Array<Promise<void>> = [];
      const run = await runCodeModeProgram({
        sandbox: ctx.capabilities.sandbox,
        code: ctx.input.code,
        tools: ctx.tools as Record<string, (input: unknown) => Promise<unknown>>,
        signal: ctx.signal,
        timeoutMs,
        onLog: (text) => logWrites.push(ctx.data.write("logs", text)),
      });
      await Promise.all(logWrites);
      if (run.outcome.type === "error")
        return ctx.fail(`The program threw: ${run.outcome.message}\nLogs:\n${run.logs}`);
      if (run.outcome.type === "killed")
        return ctx.fail(`The program did not finish (${run.outcome.reason}).\nLogs:\n${run.logs}`);
      return { result: run.outcome.value, logs: run.logs, toolCalls: run.toolCalls };
    },
  });
}
