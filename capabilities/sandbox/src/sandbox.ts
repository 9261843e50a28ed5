import { defineCapability } from "@pai/core";
import type { SandboxFacade } from "./sandbox-facade.ts";

/**
 * The sandbox capability: a Linux container per conversation (default lifetime `thread`) with a writable
 * `/workspace`, no network and a non-root user. Tools list it in `capabilities: { sandbox }` and get the
 * {@link SandboxFacade} at `ctx.capabilities.sandbox`; the runtime gets a binding such as `dockerSandbox()`.
 *
 * @example
 * export const runScript = defineTool({
 *   id: "runScript",
 *   description: "Run a command in this conversation's sandbox.",
 *   inputSchema: z.object({ command: z.string() }),
 *   capabilities: { sandbox },
 *   execute: (ctx) => ctx.capabilities.sandbox.runCommand({ command: ctx.input.command }),
 * });
 */
export const sandbox = defineCapability<"sandbox", SandboxFacade>({
  name: "sandbox",
  defaultLifetime: "thread",
  description:
    "A Linux container with bash, coreutils, python3 (IPython, numpy, pandas, matplotlib), node and git; files live in /workspace; no network; code contexts keep Python or JavaScript state between calls.",
  members: {
    runCommand: true,
    spawn: true,
    writeFiles: true,
    readFile: true,
    readTextFile: true,
    listFiles: true,
    stat: true,
    removeFile: true,
    uploadDirectory: true,
    downloadDirectory: true,
    info: true,
    createCodeContext: true,
    listCodeContexts: true,
    restartCodeContext: true,
    removeCodeContext: true,
    runCode: true,
    exposePort: true,
    openTerminal: true,
  },
});
