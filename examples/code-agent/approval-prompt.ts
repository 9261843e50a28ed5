import { createInterface, type Interface } from "node:readline";

/** What the person at the terminal said: the end of input and a stop are answers too, never a hang. */
export type ApprovalAnswer = "yes" | "no" | "end-of-input" | "stopped";

/** What {@link createApprovalPrompt} accepts. */
export interface ApprovalPromptOptions {
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
  /** Aborting it ends a question in progress with `"stopped"`. */
  signal: AbortSignal;
}

/** Asks yes/no questions at the terminal. */
export interface ApprovalPrompt {
  /** Shows `question` and waits for one line: `y`/`yes` is `"yes"`, any other line `"no"`. */
  ask(question: string): Promise<ApprovalAnswer>;
  /** Stops reading the input. */
  close(): void;
}

/**
 * A yes/no prompt on a line reader made on the first question (so a run without approvals never reads stdin).
 * Lines typed ahead are kept for the next question; the end of input (`< /dev/null`, a closed pipe, Ctrl-D) is
 * `"end-of-input"`; Ctrl-C at the prompt is the same SIGINT as anywhere else.
 */
export function createApprovalPrompt(options: ApprovalPromptOptions): ApprovalPrompt {
  const { signal } = options;
  let reader: { lines: AsyncIterator<string>; close(): void } | undefined;

  function open(): { lines: AsyncIterator<string>; close(): void } {
    const readline: Interface = createInterface({ input: options.input, output: options.output });
    // In raw terminal mode readline takes Ctrl-C itself and would close the input: send the signal instead.
    readline.on("SIGINT", () => process.kill(process.pid, "SIGINT"));
    return { lines: readline[Symbol.asyncIterator](), close: () => readline.close() };
  }

  return {
    async ask(question) {
      if (signal.aborted) return "stopped";
      reader ??= open();
      options.output.write(question);
      let onAbort: (() => void) | undefined;
      const aborted = new Promise<"stopped">((resolve) => {
        onAbort = () => resolve("stopped");
        signal.addEventListener("abort", onAbort, { once: true });
      });
      try {
        const next = await Promise.race([reader.lines.next(), aborted]);
        if (next === "stopped") return "stopped";
        if (next.done) return "end-of-input";
        return /^y(es)?$/i.test(next.value.trim()) ? "yes" : "no";
      } finally {
        if (onAbort) signal.removeEventListener("abort", onAbort);
      }
    },
    close() {
      reader?.close();
    },
  };
}
