import { mkdir, writeFile } from "node:fs/promises";
import { basename, join } from "node:path";
import { defineTool } from "@pai/core";
import { defineCodeInterpreterTool, sandbox } from "@pai/sandbox";
import { z } from "zod";

/** Keeps the end of long output: what the model reads of a command. */
function tail(text: string, max = 4000): string {
  return text.length <= max ? text : `…(${text.length - max} characters cut)…\n${text.slice(-max)}`;
}

export const writeSandboxFile = defineTool({
  id: "sandbox.writeFile",
  description: "Write a text file into the sandbox workspace (paths are relative to /workspace).",
  inputSchema: z.object({ path: z.string(), content: z.string() }),
  outputSchema: z.object({ path: z.string(), bytes: z.number() }),
  capabilities: { sandbox },
  execute: async (ctx) => {
    await ctx.capabilities.sandbox.writeFiles([{ path: ctx.input.path, content: ctx.input.content }], {
      signal: ctx.signal,
    });
    return { path: ctx.input.path, bytes: Buffer.byteLength(ctx.input.content) };
  },
});

export const runCommand = defineTool({
  id: "sandbox.runCommand",
  description:
    "Run a shell command in this conversation's sandbox (bash, python3, node and git are installed; there is no network). Returns the exit code and output.",
  inputSchema: z.object({ command: z.string() }),
  outputSchema: z.object({
    exitCode: z.number(),
    stdout: z.string(),
    stderr: z.string(),
    durationMs: z.number(),
    terminationReason: z.string(),
  }),
  data: { output: z.object({ stream: z.enum(["stdout", "stderr"]), text: z.string() }) },
  capabilities: { sandbox },
  execute: async (ctx) => {
    const writes: Array<Promise<void>> = [];
    const result = await ctx.capabilities.sandbox.runCommand({
      command: ctx.input.command,
      timeoutMs: 120_000,
      signal: ctx.signal,
      onStdout: (text) => writes.push(ctx.data.write("output", { stream: "stdout", text })),
      onStderr: (text) => writes.push(ctx.data.write("output", { stream: "stderr", text })),
    });
    await Promise.all(writes);
    return {
      exitCode: result.exitCode,
      stdout: tail(result.stdout),
      stderr: tail(result.stderr),
      durationMs: Math.round(result.durationMs),
      terminationReason: result.terminationReason,
    };
  },
});

/** Copies a sandbox file to the host, under `.pai/exports/<thread>/`: it leaves the sandbox, so a person approves. */
export const exportFile = defineTool({
  id: "sandbox.exportFile",
  description: "Copy a file out of the sandbox to the user's machine. A person must approve it.",
  inputSchema: z.object({ path: z.string() }),
  outputSchema: z.object({ exportedTo: z.string(), bytes: z.number() }),
  suspendSchema: z.object({ question: z.string(), path: z.string(), bytes: z.number() }),
  capabilities: { sandbox },
  execute: async (ctx) => {
    const content = await ctx.capabilities.sandbox.readFile(ctx.input.path, { signal: ctx.signal });
    if (content === null) return ctx.fail(`There is no file ${ctx.input.path} in the sandbox.`);
    const destination = join(".pai", "exports", ctx.thread.threadId, basename(ctx.input.path));
    if (ctx.entry.type === "initial") {
      return ctx.suspend({
        question: `Copy ${ctx.input.path} (${content.byteLength} bytes) out of the sandbox to ${destination}?`,
        path: ctx.input.path,
        bytes: content.byteLength,
      });
    }
    await mkdir(join(".pai", "exports", ctx.thread.threadId), { recursive: true });
    await writeFile(destination, content);
    return { exportedTo: destination, bytes: content.byteLength };
  },
});

/** Python (IPython with pandas and matplotlib), JavaScript and TypeScript cells whose state persists between calls. */
export const codeInterpreter = defineCodeInterpreterTool();
