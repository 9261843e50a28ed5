import { defineTool } from "@pai/core";
import { sandbox } from "@pai/sandbox";
import { z } from "zod";
import { createOutputStream } from "./output-stream.ts";

/**
 * Writes one file into the conversation's sandbox and runs a command there, streaming stdout and stderr to
 * the page as `output` tool data while it runs.
 */
export const runScript = defineTool({
  id: "runScript",
  description:
    "Write a file into this conversation's sandbox (a Linux container with bash, python3, node and git; " +
    "no network; files live in /workspace) and run a shell command there. Returns the exit code and output.",
  inputSchema: z.object({
    path: z.string().describe("File to write, relative to /workspace, e.g. main.py"),
    content: z.string().describe("The file's full content"),
    command: z.string().describe("Shell command to run afterwards, e.g. python3 main.py"),
  }),
  outputSchema: z.object({
    exitCode: z.number(),
    terminationReason: z.enum(["exit", "timeout", "abort", "output-limit"]),
    durationMs: z.number(),
    stdout: z.string(),
    stderr: z.string(),
  }),
  data: { output: z.string() },
  capabilities: { sandbox },
  execute: async (ctx) => {
    const box = ctx.capabilities.sandbox;
    await box.writeFiles([{ path: ctx.input.path, content: ctx.input.content }]);
    const output = createOutputStream((chunk) => ctx.data.write("output", chunk));
    output.write(`$ ${ctx.input.command}\n`);
    const result = await box.runCommand({
      command: ctx.input.command,
      timeoutMs: 60_000,
      signal: ctx.signal,
      onStdout: output.write,
      onStderr: output.write,
    });
    await output.flush();
    return {
      exitCode: result.exitCode,
      terminationReason: result.terminationReason,
      durationMs: result.durationMs,
      stdout: tail(result.stdout),
      stderr: tail(result.stderr),
    };
  },
});

/** The last 4 KB: enough for the model, small on the thread (the full output streamed as tool data). */
function tail(text: string): string {
  return text.length > 4096 ? `…${text.slice(-4096)}` : text;
}
