import type { LanguageModelV4CallOptions } from "@ai-sdk/provider";
import type { ScriptedStepSource } from "@pai/core/testing";

/** The task the demo runs when none is given. */
export const DEFAULT_TASK =
  "Write a Python program that prints the first 10 prime numbers, run it, check its output, and export the result file.";

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

/** The results the model has received so far, by tool call id. */
function toolResults(
  call: LanguageModelV4CallOptions,
): Map<string, { type: string; value?: unknown; reason?: string }> {
  const results = new Map<string, { type: string; value?: unknown; reason?: string }>();
  for (const message of call.prompt) {
    if (message.role !== "tool") continue;
    for (const part of message.content) {
      if (part.type === "tool-result")
        results.set(part.toolCallId, part.output as { type: string; value?: unknown });
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
    { toolCalls: [{ toolName: "exportFile", input: { path: "primes.txt" }, toolCallId: "export-primes" }] },
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
