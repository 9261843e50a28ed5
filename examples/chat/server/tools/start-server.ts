import { defineTool } from "@pai/core";
import { type CommandResult, type SandboxProcess, sandbox } from "@pai/sandbox";
import { z } from "zod";
import { answers, waitForPort } from "./wait-for-port.ts";

/** How long the server may take to listen on its port. */
const START_TIMEOUT_MS = 30_000;

/** The server's output kept in the sandbox's memory (it is read only when the server fails to start). */
const KEPT_OUTPUT_BYTES = 64 * 1024;

/**
 * Starts a long-running server in the conversation's sandbox, waits until its port answers, and opens a preview
 * of it: a URL on an origin of its own that the page shows in a card (`preview-card.tsx`). The server keeps
 * running after the call (a `spawn`ed process outlives it; Stop during the call kills it); it ends with the
 * sandbox (the conversation's end, or hibernation) and the preview at `expiresAt`.
 */
export const startServer = defineTool({
  id: "startServer",
  description:
    "Start a server in this conversation's sandbox and show it to the person: runs `command` in the background " +
    "from /workspace, waits until it listens on `port` (up to 30 s), then opens a preview of that port and " +
    "returns its URL (the person sees the page in the chat and can open it in a new tab). The sandbox has no " +
    "network, so this is the only way anyone can see what it serves. The command must stay in the foreground " +
    "and keep running (e.g. `python3 -m http.server 8000`, `node server.js`, `npx vite --port 5173`, not one that " +
    "daemonizes). Write the app's files first (runScript). Fails with the command's output if it exits or never " +
    "listens, or if the port is already taken (a server started earlier still runs there: reuse it).",
  inputSchema: z.object({
    command: z
      .string()
      .min(1)
      .describe("Shell command that starts the server and keeps running, e.g. python3 -m http.server 8000"),
    port: z.number().int().min(1).max(65_535).describe("The TCP port the command listens on, e.g. 8000"),
  }),
  outputSchema: z.object({
    url: z.string().describe("Where the preview opens (carries its access token)"),
    port: z.number(),
    expiresAt: z.string().describe("When the preview closes (ISO 8601)"),
    command: z.string(),
  }),
  capabilities: { sandbox },
  // the URL carries the preview's access token: the card shows it to the person, the model is not told it
  toModelOutput: ({ output }) => ({
    type: "json",
    value: {
      port: output.port,
      expiresAt: output.expiresAt,
      command: output.command,
      shown:
        "The person sees the page in a preview card in the chat, with a link that opens it in a new tab.",
    },
  }),
  execute: async (ctx) => {
    const box = ctx.capabilities.sandbox;
    const { command, port } = ctx.input;
    if (await answers({ sandbox: box, port, signal: ctx.signal })) {
      ctx.fail(
        `Port ${port} already answers in the sandbox: a server started earlier still runs there. ` +
          "Use another port, or stop that server first.",
      );
    }
    const server = await box.spawn({
      command,
      maxOutputBytes: KEPT_OUTPUT_BYTES,
      maxBufferedBytes: KEPT_OUTPUT_BYTES,
    });
    let live = false;
    try {
      const wait = await waitForPort({
        sandbox: box,
        port,
        server,
        timeoutMs: START_TIMEOUT_MS,
        signal: ctx.signal,
      });
      if (wait.outcome === "exited") {
        ctx.fail(
          `\`${command}\` exited (${howItEnded(wait.result)}) before port ${port} answered.${outputOf(server, wait.result)}`,
        );
      }
      if (wait.outcome === "timeout") {
        ctx.fail(
          `\`${command}\` runs but nothing answered on port ${port} within ${START_TIMEOUT_MS / 1000} s ` +
            `(it was stopped).${outputOf(server)}`,
        );
      }
      const preview = await box.exposePort(port, { signal: ctx.signal });
      live = true;
      return { url: preview.url, port: preview.port, expiresAt: preview.expiresAt, command };
    } finally {
      // a server that never became a preview does not keep running unseen
      if (!live) await server.kill().catch(() => undefined);
    }
  },
});

function howItEnded(result: CommandResult): string {
  return result.terminationReason === "exit" ? `exit ${result.exitCode}` : result.terminationReason;
}

/** The last lines the server printed, for the model to read why it failed. */
function outputOf(server: SandboxProcess, result?: CommandResult): string {
  const { stdout, stderr } = result ?? server.output();
  const printed = [stdout.trim(), stderr.trim()].filter(Boolean).join("\n");
  if (!printed) return " It printed nothing.";
  return ` Its output:\n${printed.length > 2000 ? `…${printed.slice(-2000)}` : printed}`;
}
