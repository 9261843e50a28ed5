// `npm run demo`: a code-execution agent in the terminal. Its tools write files and run commands in a real
// Docker sandbox from PAI's warm pool (one per conversation); exporting a file out of the sandbox needs your
// approval at the prompt (`--yes` approves it; the end of input counts as "no"). Threads persist in
// .pai/demo.db; `npm run demo -- --thread <id>` continues one, and `--rewind <messageId>` first takes it back to that
// message: later messages dropped, the sandbox's files as they were then (checkpoints in .pai/demo-checkpoints), its
// programs stopped. Ctrl-C or SIGTERM stops the run and removes the sandboxes before the process exits.
import { parseArgs } from "node:util";
import {
  type AgentRun,
  createAgentRuntime,
  createFileCheckpointStore,
  createPai,
  createSqliteThreadStore,
  defineAgent,
  PaiError,
  type PublicPendingAction,
} from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { logRuntimeError } from "@pai/examples-shared/log-runtime-error";
import { modelFromEnv } from "@pai/examples-shared/model-from-env";
import { dockerSandbox } from "@pai/sandbox";
import { type ApprovalAnswer, createApprovalPrompt } from "./approval-prompt.ts";
import { printMessageIds, printRewind } from "./rewind-view.ts";
import { DEFAULT_TASK, scriptedPlan } from "./scripted-plan.ts";
import { bold, dim, green, renderRun, type ViewCounts, yellow } from "./terminal-view.ts";
import { codeInterpreter, exportFile, runCommand, writeSandboxFile } from "./tools.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    thread: { type: "string" },
    rewind: { type: "string" },
    yes: { type: "boolean", default: false },
  },
});
if (values.rewind !== undefined && !values.thread) {
  console.error(
    "--rewind takes the thread back to a message of it: npm run demo -- --thread <id> --rewind <messageId>",
  );
  process.exit(2);
}
const task = positionals.join(" ").trim() || (values.thread ? "" : DEFAULT_TASK);
if (!task && values.rewind === undefined) {
  console.error('Give the next message for the thread: npm run demo -- --thread <id> "your message"');
  process.exit(2);
}

// A signal stops the run and frees the sandboxes (runtime.close in the `finally` below) before the process exits;
// a second one exits at once, leaving what is left to the next start (it reattaches or reaps it).
const stop = new AbortController();
const exitCodes = { SIGINT: 130, SIGTERM: 143 } as const;
let stoppedBy: keyof typeof exitCodes | undefined;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (stoppedBy) {
      console.error(
        yellow(`${signal} again: exiting now; the next start of the demo cleans up what is left`),
      );
      process.exit(exitCodes[signal]);
    }
    stoppedBy = signal;
    console.log(yellow(`\n${signal}: stopping the run and removing its sandbox…`));
    stop.abort();
  });
}

const selected = modelFromEnv();
const model =
  selected.model ??
  createScriptedModel({ steps: scriptedPlan(task), fallback: { text: "(The scripted plan is over.)" } });
const agent = defineAgent({
  name: "coder",
  instructions:
    "You are a careful coding agent working in a Linux sandbox at /workspace (bash, python3, node, git; no network). " +
    "Write files, run them, check the results, and report only what the tool results show. For data work use " +
    "codeInterpreter (pandas, matplotlib): look at the charts it returns before you describe them.",
  tools: { writeFile: writeSandboxFile, runCommand, codeInterpreter, exportFile },
  maxSteps: 30,
  onRuntimeError: logRuntimeError("[pai demo]", (line) => console.error(dim(line))),
});
const runtime = createAgentRuntime({
  pai: createPai({ agents: { coder: agent } }),
  store: createSqliteThreadStore({ path: ".pai/demo.db" }),
  // a checkpoint of the sandbox's files at the end of each run: what --rewind restores
  checkpoints: { store: createFileCheckpointStore({ directory: ".pai/demo-checkpoints" }) },
  model,
  capabilities: {
    sandbox: dockerSandbox({
      pool: { min: 1, max: 4 },
      // the pool starts IPython in its warm containers: the first cell does not wait for it
      codeInterpreter: { prewarm: ["python"] },
      ...(process.env.PAI_DEMO_POOL_ID ? { poolId: process.env.PAI_DEMO_POOL_ID } : {}),
    }),
  },
});
const prompt = createApprovalPrompt({ input: process.stdin, output: process.stdout, signal: stop.signal });

const started = performance.now();
const counts: ViewCounts = { steps: 0, commands: 0, toolCalls: 0 };
const identity = { userId: "demo" };
let threadId = values.thread;
let status = "not started";
let lastMessageId: string | undefined;

console.log(
  bold("PAI code agent"),
  dim(`— model: ${selected.description ?? "embedded scripted model (no API key set)"}`),
);
try {
  console.log(dim("warming the sandbox pool…"));
  const warmStart = performance.now();
  await runtime.startCapabilities();
  console.log(dim(`sandbox pool warm in ${Math.round(performance.now() - warmStart)} ms`));
  if (values.rewind !== undefined && threadId && !stop.signal.aborted) {
    status = (await rewind(threadId, values.rewind)) ? "rewound" : "not rewound";
  }
  if (task && status !== "not rewound" && !stop.signal.aborted) {
    console.log(`${bold("task:")} ${task}\n`);
    let run = await runtime.run({
      agentId: "coder",
      identity,
      message: task,
      signal: stop.signal,
      ...(threadId ? { threadId } : {}),
    });
    threadId = run.threadId;
    status = await renderAndWait(run);
    while (status === "suspended" && !stop.signal.aborted) {
      const [action] = await runtime.listPendingActions({ threadId, identity });
      if (!action) break;
      const answer = await ask(action);
      if (answer === "stopped") {
        console.log(yellow("  not answered: the approval stays pending in .pai/demo.db"));
        break;
      }
      const answered = await runtime.respond({
        threadId,
        actionId: action.actionId,
        toolCallId: action.toolCallId,
        toolId: action.toolId,
        inputHash: action.inputHash,
        identity,
        answer:
          answer === "yes"
            ? { type: "resume", resume: { approved: true } }
            : {
                type: "deny",
                reason:
                  answer === "end-of-input"
                    ? "No answer: the terminal's input ended, which counts as no."
                    : "The user declined at the terminal.",
              },
        signal: stop.signal,
      });
      if (answered.status !== "accepted" || !answered.run) break;
      run = answered.run;
      status = await renderAndWait(run);
    }
  }
} finally {
  prompt.close();
  if (stoppedBy) console.log(dim("removing the sandboxes…"));
  await runtime.close();
}

const seconds = ((performance.now() - started) / 1000).toFixed(1);
console.log(
  `\n${bold("summary:")} ${stoppedBy ? `stopped by ${stoppedBy}` : status}; ${counts.steps} model steps, ${counts.commands} commands, ${counts.toolCalls} tool calls, ${seconds} s`,
);
if (threadId) {
  console.log(
    dim(
      `thread ${threadId} is saved in .pai/demo.db — continue it with: npm run demo -- --thread ${threadId} "…"`,
    ),
  );
  if (lastMessageId)
    console.log(
      dim(
        `come back to this point later with: npm run demo -- --thread ${threadId} --rewind ${lastMessageId}`,
      ),
    );
}
if (stoppedBy) process.exitCode = exitCodes[stoppedBy];

async function renderAndWait(current: AgentRun): Promise<string> {
  await renderRun(current.stream, counts);
  const done = await current.done;
  lastMessageId = done.messages.at(-1)?.id;
  if (done.status === "failed") console.log(yellow(`run failed: ${done.error}`));
  if (done.status === "cancelled") console.log(yellow("run cancelled"));
  return done.status;
}

/** Rewinds the thread and says what it did; an unknown message lists the thread's messages instead (false). */
async function rewind(thread: string, toMessageId: string): Promise<boolean> {
  try {
    printRewind(await runtime.rewindThread({ threadId: thread, toMessageId, identity }));
    return true;
  } catch (error) {
    if (PaiError.hasCode(error, "NOT_FOUND")) {
      console.error(yellow(`there is no thread ${thread} in .pai/demo.db`));
      process.exitCode = 2;
      return false;
    }
    if (!PaiError.hasCode(error, "UNKNOWN_MESSAGE")) throw error;
    console.error(yellow(`thread ${thread} has no message ${toMessageId}; its messages are:`));
    printMessageIds((await runtime.getThread(thread, { identity }))?.messages ?? []);
    process.exitCode = 2;
    return false;
  }
}

async function ask(action: PublicPendingAction): Promise<ApprovalAnswer> {
  const question = (action.payload as { question?: string }).question ?? `Allow ${action.toolName}?`;
  console.log(`\n${yellow("⏸ approval needed:")} ${question}`);
  if (values.yes) {
    console.log(green("  approved (--yes)"));
    return "yes";
  }
  const answer = await prompt.ask("  approve? [y/N] ");
  if (answer === "yes") console.log(green("  approved"));
  if (answer === "no") console.log(yellow("  denied — the model will be told"));
  if (answer === "end-of-input")
    console.log(yellow("\n  no answer: the input ended, which counts as no — the model will be told"));
  return answer;
}
