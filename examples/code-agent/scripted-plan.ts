import type { LanguageModelV4CallOptions } from "@ai-sdk/provider";
import type { ScriptedStepSource } from "@pai/core/testing";

/** The task the demo runs when none is given. */
export const DEFAULT_TASK =
  "Write a Python program that prints the first 10 prime numbers, run it, check its output, and export the result file. " +
  "Then load a small CSV of monthly sales, plot it, and tell me what the chart shows.";

/** The small CSV the plan loads and plots. */
const SALES_CSV = `month,units
Jan,120
Feb,135
Mar,128
Apr,160
May,210
Jun,185
`;

/** The cell that loads the CSV and plots it (a figure left open at the end of a cell is returned as a PNG). */
const PLOT_CELL = `import pandas as pd
import matplotlib.pyplot as plt

sales = pd.read_csv("sales.csv")
print(sales.describe().loc[["min", "max", "mean"]].round(1))
print("peak:", sales.loc[sales.units.idxmax(), "month"])
ax = sales.plot(x="month", y="units", marker="o", legend=False, title="Units sold per month")
ax.set_ylabel("units")
sales`;

const PRIMES_PY = `def primes(count):
    found = []
    candidate = 2
    while len(found) < count:
        if all(candidate % p for p in found if p * p <= candidate):
            found.append(candidate)
        candidate += 1
    return found


if __name__ == "__main__":
    for prime in primes(10):
        print(prime)
`;

/** A tool result as the model receives it (`json`, `content` with text and image parts, `execution-denied`…). */
interface ModelToolResult {
  type: string;
  value?: unknown;
  reason?: string;
}

/** The results the model has received so far, by tool call id. */
function toolResults(call: LanguageModelV4CallOptions): Map<string, ModelToolResult> {
  const results = new Map<string, ModelToolResult>();
  for (const message of call.prompt) {
    if (message.role !== "tool") continue;
    for (const part of message.content) {
      if (part.type === "tool-result") results.set(part.toolCallId, part.output as ModelToolResult);
    }
  }
  return results;
}

/**
 * The embedded model's plan. It plays the default task honestly — every figure it reports comes from the
 * tool results it received — and says plainly that it is scripted. Any other task gets an honest refusal.
 */
export function scriptedPlan(task: string): ScriptedStepSource[] {
  if (task.trim() !== DEFAULT_TASK) {
    return [
      {
        text:
          "I'm PAI's embedded scripted model, so I can only play the demo's fixed plan — I can't work on your own task. " +
          "Set OPENAI_API_KEY, ANTHROPIC_API_KEY or PAI_MODEL_BASE_URL (+ PAI_MODEL) to run it with a real model, " +
          "or run `npm run demo` without a task to watch the scripted plan.",
      },
    ];
  }
  return [
    {
      text: "I'm PAI's embedded scripted model (no API key is set), playing a fixed plan for the default task. First, the program:",
      toolCalls: [
        {
          toolName: "writeFile",
          input: { path: "primes.py", content: PRIMES_PY },
          toolCallId: "write-primes",
        },
      ],
    },
    {
      toolCalls: [
        {
          toolName: "runCommand",
          input: { command: "python3 primes.py | tee primes.txt" },
          toolCallId: "run-primes",
        },
      ],
    },
    {
      toolCalls: [
        {
          toolName: "runCommand",
          input: {
            command:
              'test "$(wc -l < primes.txt)" -eq 10 && test "$(tail -n 1 primes.txt)" -eq 29 && echo "check passed: 10 primes, the last is 29"',
          },
          toolCallId: "check-primes",
        },
      ],
    },
    {
      text: "Now the sales data: I write the CSV, then load and plot it in the code interpreter.",
      toolCalls: [
        {
          toolName: "writeFile",
          input: { path: "sales.csv", content: SALES_CSV },
          toolCallId: "write-sales",
        },
      ],
    },
    { toolCalls: [{ toolName: "codeInterpreter", input: { code: PLOT_CELL }, toolCallId: "plot-sales" }] },
    (call) => ({
      text: describeChart(toolResults(call).get("plot-sales")),
      toolCalls: [{ toolName: "exportFile", input: { path: "primes.txt" }, toolCallId: "export-primes" }],
    }),
    (call) => {
      const results = toolResults(call);
      const run = results.get("run-primes")?.value as { stdout?: string } | undefined;
      const check = results.get("check-primes")?.value as { exitCode?: number } | undefined;
      const exported = results.get("export-primes");
      const primes = (run?.stdout ?? "").trim().split(/\s+/).filter(Boolean).join(", ");
      const checkLine =
        check?.exitCode === 0 ? "The check passed." : `The check failed (exit ${check?.exitCode ?? "?"}).`;
      const exportLine =
        exported?.type === "execution-denied"
          ? "You declined the export, so primes.txt stays in the sandbox."
          : exported?.type === "json"
            ? `primes.txt is now at ${(exported.value as { exportedTo: string }).exportedTo}.`
            : "The export did not complete.";
      return {
        text: `Done. The program printed: ${primes || "(nothing)"}. ${checkLine} ${exportLine} (This was the scripted plan.)`,
      };
    },
  ];
}

/**
 * What the scripted model says of the chart: which image parts its prompt held (a real model looks at them and
 * describes the chart) and what the cell's text output says of the data.
 */
function describeChart(result: ModelToolResult | undefined): string {
  if (result?.type !== "content" || !Array.isArray(result.value)) {
    return `The plot did not come back as expected (${result?.type ?? "no result"}).`;
  }
  const parts = result.value as Array<{
    type: string;
    text?: string;
    mediaType?: string;
    data?: { data?: string };
  }>;
  const images = parts.filter((part) => part.type === "file" && part.mediaType?.startsWith("image/"));
  const text = parts.find((part) => part.type === "text")?.text ?? "";
  const max = /max\s+(\d+(?:\.\d+)?)/.exec(text)?.[1];
  const min = /min\s+(\d+(?:\.\d+)?)/.exec(text)?.[1];
  const peak = /peak: (\w+)/.exec(text)?.[1];
  if (images.length === 0) return "The plot ran, but no image of the chart reached me.";
  const sizes = images.map(
    (image) => `${image.mediaType}, ${Math.round(((image.data?.data?.length ?? 0) * 3) / 4 / 1024)} KiB`,
  );
  return (
    `The chart came to me as ${images.length === 1 ? "an image" : `${images.length} images`} (${sizes.join("; ")}). ` +
    "A real model would look at it and describe it; as the scripted model I only read the printed summary: " +
    `monthly units range from ${min ?? "?"} to ${max ?? "?"}, the peak in ${peak ?? "?"}. Next, the export:`
  );
}
