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

/** The file the scripted plan writes and commits. */
export const SCRIPTED_FILE = "fib.py";

/**
 * The chat server's model when no API key is set: a scripted model playing a fixed, honest plan for every
 * message — write and run a Python script in the sandbox, ask to commit it, then report — reading the tool
 * results from the prompt. It says plainly that it is scripted, in a little markdown (emphasis, inline code, a list, a
 * code block) so the page's markdown rendering shows.
 */
export function createScriptedPlan(): ScriptedModel {
  return createScriptedModel({ steps: [], fallback: nextStep, modelId: "pai-scripted-chat" });
}

function nextStep(call: LanguageModelV4CallOptions): ScriptedStep {
  const results = toolResultsSinceLastUserMessage(call);
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
      "2. ask you before committing it.",
    toolCalls: [
      {
        toolName: "runScript",
        input: { path: SCRIPTED_FILE, content: SCRIPT, command: `python3 ${SCRIPTED_FILE}` },
      },
    ],
  };
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
