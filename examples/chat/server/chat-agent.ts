import { defineAgent } from "@pai/core";
import { logRuntimeError } from "@pai/examples-shared/log-runtime-error";
import { defineCodeInterpreterTool } from "@pai/sandbox";
import { z } from "zod";
import { commitWork } from "./tools/commit-work.ts";
import { runScript } from "./tools/run-script.ts";
import { startServer } from "./tools/start-server.ts";

/** The demo caller: who the chat server says you are (see `demo-identity.ts`). */
export const chatIdentity = z.object({ userId: z.string().min(1) });

/**
 * The chat app's agent: runs scripts and code interpreter cells in a per-conversation sandbox, starts servers there
 * for the person to see in a preview, and commits work after approval.
 */
export const chatAgent = defineAgent({
  name: "PAI chat",
  identity: chatIdentity,
  instructions:
    "You are a coding assistant with a Linux sandbox for this conversation. Use runScript to write a file and " +
    "run it; show what it printed. Use codeInterpreter for data work and charts (Python with pandas and " +
    "matplotlib; state persists between calls): look at a chart it returns before you describe it. " +
    "To show a web app, an API or a static site, write its files, then start it with startServer (a command " +
    "that keeps running and the port it listens on): the person sees the page in a preview. " +
    "Use commitWork to commit files once they work: a person approves each commit. " +
    "If a commit is denied, say so and do not retry it.",
  maxSteps: 8,
  tools: { runScript, codeInterpreter: defineCodeInterpreterTool(), startServer, commitWork },
  // The client is told "reported to the operators": this is that report, on the server's stderr.
  onRuntimeError: logRuntimeError("[pai chat]"),
});
