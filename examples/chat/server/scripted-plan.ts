import type { LanguageModelV4CallOptions } from "@ai-sdk/provider";
import { createScriptedModel, type ScriptedModel, type ScriptedStep } from "@pai/core/testing";

const SCRIPT = `# Written by PAI's scripted demo model
import time

def fib(n):
    a, b = 0, 1
    for _ in range(n):
        yield a
        a, b = b, a + b

for i, value in enumerate(fib(12)):
    print(f"fib({i}) = {value}", flush=True)
    time.sleep(0.15)
`;

/** The code interpreter cell of the chart plan: loads a small CSV, shows it as a table, plots it (printing as it goes). */
const CHART_CELL = `import io, time
import pandas as pd
import matplotlib.pyplot as plt

print("loading the CSV…", flush=True)
weather = pd.read_csv(io.StringIO("""day,high,low
Mon,14,6
Tue,17,8
Wed,21,11
Thu,19,10
Fri,23,13
"""))
time.sleep(0.5)
print("plotting…", flush=True)
weather.plot(x="day", marker="o", title="Daily temperatures (°C)")
display(weather)
print("warmest:", weather.loc[weather.high.idxmax(), "day"])`;

/** A message that asks for the chart plan. */
const CHART_REQUEST = /chart|plot|graph|data/i;

/** A message that asks for the server plan. */
const SERVER_REQUEST = /\bserve|server|preview|web ?(site|page)/i;

/** A message that asks to delete the script: the cleanup plan. */
const DELETE_REQUEST = /\b(delete|remove)\b/i;

/** The script the cleanup plan writes, runs and removes. */
const CLEANUP_SCRIPT = "cleanup.sh";

/** The page the server plan writes, which the directory listing then shows. */
export const SERVED_FILE = "hello.html";

const SERVED_PAGE = `<!doctype html>
<meta charset="utf-8">
<title>Hello from the sandbox</title>
<h1>Hello from the sandbox</h1>
<p>python3 -m http.server serves this page from this conversation's /workspace.</p>
`;

/** The server the server plan starts. */
export const SCRIPTED_SERVER = { command: "python3 -m http.server 8000", port: 8000 } as const;

/** The file the scripted plan writes and commits. */
export const SCRIPTED_FILE = "fib.py";

/**
 * The chat server's model when no API key is set: a scripted model playing a fixed, honest plan for every
 * message — write and run a Python script in the sandbox, ask to commit it, then report — reading the tool
 * results from the prompt; a message that asks for a chart plays the chart plan, one that asks for a server the
 * server plan, one that asks to delete or remove something the cleanup plan (it deletes the script). It says
 * plainly that it is scripted, in a little markdown (emphasis, inline code, a list, a code block) so the page's
 * markdown rendering shows.
 */
export function createScriptedPlan(): ScriptedModel {
  return createScriptedModel({ steps: [], fallback: nextStep, modelId: "pai-scripted-chat" });
}

function nextStep(call: LanguageModelV4CallOptions): ScriptedStep {
  const results = toolResultsSinceLastUserMessage(call);
  if (SERVER_REQUEST.test(lastUserText(call))) return serverStep(results);
  if (DELETE_REQUEST.test(lastUserText(call))) return cleanupStep(results);
  const chart = results.findLast((result) => result.toolName === "codeInterpreter");
  if (chart) return { text: describeChart(chart.output) };
  if (CHART_REQUEST.test(lastUserText(call)) && results.length === 0) {
    return {
      text:
        "I am PAI's **scripted demo model**, playing the chart plan: load a small CSV in the code interpreter, " +
        "show it as a table and plot it.",
      toolCalls: [{ toolName: "codeInterpreter", input: { code: CHART_CELL, language: "python" } }],
    };
  }
  const commit = results.findLast((result) => result.toolName === "commitWork");
  const run = results.findLast((result) => result.toolName === "runScript");
  if (commit) {
    const outcome = commit.output as { type?: string; value?: unknown; reason?: string } | undefined;
    if (outcome?.type === "json") {
      const { commit: sha } = (outcome.value ?? {}) as { commit?: string };
      return {
        text:
          `Committed ${SCRIPTED_FILE} as ${sha}. That is the end of the **scripted plan**; the history now reads:\n\n` +
          `\`\`\`sh\n$ git log --oneline\n${sha} Add ${SCRIPTED_FILE}\n\`\`\``,
      };
    }
    if (outcome?.type === "execution-denied") {
      return {
        text: `You denied the commit, so \`${SCRIPTED_FILE}\` stays uncommitted. End of the **scripted plan**.`,
      };
    }
    return { text: `The commit did not happen (${describe(outcome)}). End of the scripted plan.` };
  }
  if (run) {
    const outcome = run.output as { type?: string } | undefined;
    if (outcome?.type !== "json") {
      return { text: `The script did not run: ${describe(outcome)}. End of the scripted plan.` };
    }
    return {
      text: "The script ran in the sandbox; its output is above. Committing it needs your **approval**.",
      toolCalls: [
        {
          toolName: "commitWork",
          input: { paths: [SCRIPTED_FILE], message: "Add fib.py" },
        },
      ],
    };
  }
  return {
    text:
      "I am PAI's **scripted demo model** (no `OPENAI_API_KEY`, `ANTHROPIC_API_KEY` or `PAI_MODEL_BASE_URL` is " +
      "set), so I play a fixed plan whatever you ask:\n\n" +
      `1. write \`${SCRIPTED_FILE}\` in this conversation's sandbox and run it;\n` +
      "2. ask you before committing it.\n\n" +
      "Ask for a *chart* to see the code interpreter, or for a *web server* to see a preview, instead.",
    toolCalls: [
      {
        toolName: "runScript",
        input: { path: SCRIPTED_FILE, content: SCRIPT, command: `python3 ${SCRIPTED_FILE}` },
      },
    ],
  };
}

/** The server plan: write a page, serve the folder with python's http.server, point at the preview. */
function serverStep(results: ToolResult[]): ScriptedStep {
  const served = results.findLast((result) => result.toolName === "startServer");
  if (served) {
    const outcome = served.output as { type?: string; value?: unknown } | undefined;
    if (outcome?.type !== "json") {
      return { text: `The server did not start: ${describe(outcome)}. End of the server plan.` };
    }
    const { port } = (outcome.value ?? {}) as { port?: number };
    return {
      text:
        `python's http.server runs in the sandbox on port ${port}: the card above shows its directory listing ` +
        `(click \`${SERVED_FILE}\`), and **Open** shows it in a tab of its own. End of the **server plan**.`,
    };
  }
  const wrote = results.findLast((result) => result.toolName === "runScript");
  if (wrote) {
    const outcome = wrote.output as { type?: string } | undefined;
    if (outcome?.type !== "json") {
      return { text: `Writing the page failed: ${describe(outcome)}. End of the server plan.` };
    }
    return {
      text: `\`${SERVED_FILE}\` is written. Now the server, and a preview of its port:`,
      toolCalls: [{ toolName: "startServer", input: { ...SCRIPTED_SERVER } }],
    };
  }
  return {
    text:
      "I am PAI's **scripted demo model**, playing the server plan: write a small page in this conversation's " +
      `sandbox, serve the folder with \`${SCRIPTED_SERVER.command}\` and show you the preview.`,
    toolCalls: [
      {
        toolName: "runScript",
        input: { path: SERVED_FILE, content: SERVED_PAGE, command: "ls -l" },
      },
    ],
  };
}

/**
 * The cleanup plan: delete the script with `rm -v` (which names what it removed, or says there was nothing), so
 * the output shows whether the file was there — after a rewind, it is again.
 */
function cleanupStep(results: ToolResult[]): ScriptedStep {
  const ran = results.findLast((result) => result.toolName === "runScript");
  if (ran) {
    const outcome = ran.output as { type?: string; value?: unknown } | undefined;
    if (outcome?.type !== "json") {
      return { text: `The cleanup did not run: ${describe(outcome)}. End of the cleanup plan.` };
    }
    const { exitCode } = (outcome.value ?? {}) as { exitCode?: number };
    return {
      text:
        exitCode === 0
          ? `Deleted \`${SCRIPTED_FILE}\`: the workspace no longer has it. End of the **cleanup plan**.`
          : `There was no \`${SCRIPTED_FILE}\` to delete (exit code ${exitCode}). End of the **cleanup plan**.`,
    };
  }
  return {
    text: `I am PAI's **scripted demo model**, playing the cleanup plan: delete \`${SCRIPTED_FILE}\` from this conversation's sandbox.`,
    toolCalls: [
      {
        toolName: "runScript",
        input: {
          path: CLEANUP_SCRIPT,
          content: `rm -v ${SCRIPTED_FILE}\n`,
          command: `sh ${CLEANUP_SCRIPT}; code=$?; rm ${CLEANUP_SCRIPT}; exit $code`,
        },
      },
    ],
  };
}

/** What the scripted model says of the chart: the image parts its prompt held and what the cell printed. */
function describeChart(output: unknown): string {
  const outcome = output as { type?: string; value?: unknown } | undefined;
  if (outcome?.type !== "content" || !Array.isArray(outcome.value)) {
    return `The cell did not run: ${describe(outcome)}. End of the scripted plan.`;
  }
  const parts = outcome.value as Array<{ type: string; text?: string; mediaType?: string }>;
  const images = parts.filter((part) => part.type === "file" && part.mediaType?.startsWith("image/"));
  const warmest = /warmest: (\w+)/.exec(parts.find((part) => part.type === "text")?.text ?? "")?.[1];
  return (
    `The chart reached me as ${images.length === 1 ? "an image" : `${images.length} images`} ` +
    `(${images.map((image) => image.mediaType).join(", ") || "none"}). A real model would look at it and describe ` +
    `the lines; as the **scripted model** I only read what the cell printed: the warmest day was ${warmest ?? "?"}. ` +
    "End of the chart plan."
  );
}

function lastUserText(call: LanguageModelV4CallOptions): string {
  const user = call.prompt.findLast((message) => message.role === "user");
  if (user?.role !== "user") return "";
  return user.content.map((part) => (part.type === "text" ? part.text : "")).join(" ");
}

interface ToolResult {
  toolName: string;
  output: unknown;
}

function toolResultsSinceLastUserMessage(call: LanguageModelV4CallOptions): ToolResult[] {
  const lastUser = call.prompt.findLastIndex((message) => message.role === "user");
  return call.prompt
    .slice(lastUser + 1)
    .flatMap((message) => (message.role === "tool" ? message.content : []))
    .filter((part) => part.type === "tool-result")
    .map((part) => ({ toolName: part.toolName, output: part.output }));
}

function describe(outcome: unknown): string {
  if (typeof outcome === "object" && outcome !== null && "value" in outcome) return String(outcome.value);
  return "no result";
}
