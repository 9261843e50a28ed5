// `npm run demo`: a code-execution agent in the terminal. Its tools write files and run commands in a real
// Docker sandbox from PAI's warm pool (one per conversation); exporting a file out of the sandbox needs your
// approval at the prompt. Threads persist in .pai/demo.db; `npm run demo -- --thread <id>` continues one.
import { createInterface } from "node:readline/promises";
import { parseArgs } from "node:util";
import {
  createAgentRuntime,
  createPai,
  createSqliteThreadStore,
  defineAgent,
  type PublicPendingAction,
} from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { modelFromEnv } from "@pai/examples-shared/model-from-env";
import { dockerSandbox } from "@pai/sandbox";
import { DEFAULT_TASK, scriptedPlan } from "./scripted-plan.ts";
import { bold, cyan, dim, green, renderRun, type ViewCounts, yellow } from "./terminal-view.ts";
import { exportFile, runCommand, writeSandboxFile } from "./tools.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { thread: { type: "string" }, yes: { type: "boolean", default: false } },
});
const task = positionals.join(" ").trim() || (values.thread ? "" : DEFAULT_TASK);
if (!task) {
  console.error('Give the next message for the thread: npm run demo -- --thread <id> "your message"');
  process.exit(2);
}

const selected = modelFromEnv();
const model =
  selected.model ??
  createScriptedModel({ steps: scriptedPlan(task), fallback: { text: "(The scripted plan is over.)" } });
const agent = defineAgent({
  name: "coder",
  instructions:
    "You are a careful coding agent working in a Linux sandbox at /workspace (bash, python3, node, git; no network). " +
    "Write files, run them, check the results, and report only what the tool results show.",
  tools: { writeFile: writeSandboxFile, runCommand, exportFile },
  maxSteps: 30,
  onRuntimeError: (error) =>
    console.error(dim(`[runtime error] ${error instanceof Error ? error.stack : String(error)}`)),
});
const sandboxBinding = dockerSandbox({ pool: { min: 1, max: 4 } });
const runtime = createAgentRuntime({
  pai: createPai({ agents: { coder: agent } }),
  store: createSqliteThreadStore({ path: ".pai/demo.db" }),
  model,
  capabilities: { sandbox: sandboxBinding },
});

const started = performance.now();
const counts: ViewCounts = { steps: 0, commands: 0, toolCalls: 0 };
const identity = { userId: "demo" };
const stop = new AbortController();
process.once("SIGINT", () => {
  console.log(yellow("\nStopping…"));
  stop.abort();
});

console.log(
  bold("PAI code agent"),
  dim(`— model: ${selected.description ?? "embedded scripted model (no API key set)"}`),
);
console.log(dim("warming the sandbox pool…"));
const warmStart = performance.now();
await runtime.startCapabilities();
console.log(dim(`sandbox pool warm in ${Math.round(performance.now() - warmStart)} ms`));
console.log(`${bold("task:")} ${task}\n`);

let threadId = values.thread;
let run = await runtime.run({
  agentId: "coder",
  identity,
  message: task,
  signal: stop.signal,
  ...(threadId ? { threadId } : {}),
});
threadId = run.threadId;
let result = await renderAndWait(run);
const prompt = createInterface({ input: process.stdin, output: process.stdout });
while (result.status === "suspended") {
  const [action] = await runtime.listPendingActions({ threadId, identity });
  if (!action) break;
  const approved = await ask(action);
  const answered = await runtime.respond({
    threadId,
    actionId: action.actionId,
    toolCallId: action.toolCallId,
    toolId: action.toolId,
    inputHash: action.inputHash,
    identity,
    answer: approved
      ? { type: "resume", resume: { approved: true } }
      : { type: "deny", reason: "The user declined at the terminal." },
  });
  if (answered.status !== "accepted" || !answered.run) break;
  run = answered.run;
  result = await renderAndWait(run);
}
prompt.close();

const seconds = ((performance.now() - started) / 1000).toFixed(1);
console.log(
  `\n${bold("summary:")} ${result.status}; ${counts.steps} model steps, ${counts.commands} commands, ${counts.toolCalls} tool calls, ${seconds} s`,
);
console.log(
  dim(
    `thread ${threadId} is saved in .pai/demo.db — continue it with: npm run demo -- --thread ${threadId} "…"`,
  ),
);
await runtime.close();

async function renderAndWait(current: typeof run) {
  await renderRun(current.stream, counts);
  const done = await current.done;
  if (done.status === "failed") console.log(yellow(`run failed: ${done.error}`));
  if (done.status === "cancelled") console.log(yellow("run cancelled"));
  return done;
}

async function ask(action: PublicPendingAction): Promise<boolean> {
  const question = (action.payload as { question?: string }).question ?? `Allow ${action.toolName}?`;
  console.log(`\n${yellow("⏸ approval needed:")} ${question}`);
  if (values.yes) {
    console.log(green("  approved (--yes)"));
    return true;
  }
  const answer = await prompt.question(cyan("  approve? [y/N] ")).catch(() => "");
  const approved = /^y(es)?$/i.test(answer.trim());
  console.log(approved ? green("  approved") : yellow("  denied — the model will be told"));
  return approved;
}
