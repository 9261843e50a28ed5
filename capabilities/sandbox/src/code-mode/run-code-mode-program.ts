import { isToolSuspension, PaiError } from "@pai/core";
import type { SandboxFacade } from "../sandbox-facade.ts";
import { codeModeProgram, MESSAGE_MARK } from "./code-mode-prelude.ts";

/** What a code-mode program produced. */
export interface CodeModeResult {
  /** `ok`: the code returned `value`; `error`: it threw `message`; `killed`: it ran out of time or was stopped. */
  outcome:
    | { type: "ok"; value: unknown }
    | { type: "error"; message: string }
    | { type: "killed"; reason: string };
  /** What the program printed (console output), tail-capped. */
  logs: string;
  /** Every tool the program called, in order. */
  toolCalls: Array<{ tool: string; ok: boolean }>;
}

type HostMessage =
  | { type: "call"; id: number; tool: string; input: unknown }
  | { type: "result"; value: unknown }
  | { type: "error"; message: string };

const MAX_LOG_CHARS = 8000;
let runs = 0;

/**
 * Runs the model's code with `node` inside the sandbox. Calls to `tools.<name>(input)` are answered on the
 * host by `tools[name]` (PAI's nested tools: validated both ways); nothing else crosses the boundary.
 *
 * When a call can no longer be answered — it waits for a person (`isToolSuspension`), or it differs from the
 * journal of a call that resumes (`JOURNAL_DIVERGED`) — the program is killed, the calls in flight settle, and
 * that error is thrown: the program runs again from its start once the wait is answered.
 */
export async function runCodeModeProgram(options: {
  sandbox: SandboxFacade;
  code: string;
  tools: Record<string, (input: unknown) => Promise<unknown>>;
  signal: AbortSignal;
  timeoutMs: number;
  onLog?: (text: string) => void;
}): Promise<CodeModeResult> {
  const path = `.pai-code/program-${process.pid}-${++runs}.cjs`;
  await options.sandbox.writeFiles([{ path, content: codeModeProgram(options.code) }], {
    signal: options.signal,
  });
  const child = await options.sandbox.spawn({
    command: "node",
    args: [path],
    stdin: "pipe",
    timeoutMs: options.timeoutMs,
    signal: options.signal,
  });
  const toolCalls: CodeModeResult["toolCalls"] = [];
  let logs = "";
  let outcome: CodeModeResult["outcome"] | undefined;
  const calls: Array<Promise<void>> = [];
  /** Why the program was stopped: a call that waits, or one that left the journal. */
  let stopped: unknown;

  const answer = async (message: Extract<HostMessage, { type: "call" }>) => {
    const tool = options.tools[message.tool];
    let reply: { id: number; ok: boolean; value?: unknown; error?: string };
    if (!tool) {
      reply = { id: message.id, ok: false, error: `there is no tool "${message.tool}"` };
    } else {
      try {
        reply = { id: message.id, ok: true, value: (await tool(message.input)) ?? null };
      } catch (error) {
        if (isToolSuspension(error) || PaiError.hasCode(error, "JOURNAL_DIVERGED")) {
          stopped ??= error;
          await child.kill("SIGKILL").catch(() => undefined);
          return;
        }
        reply = { id: message.id, ok: false, error: error instanceof Error ? error.message : String(error) };
      }
    }
    toolCalls.push({ tool: message.tool, ok: reply.ok });
    await child.writeStdin(`${JSON.stringify(reply)}\n`).catch(() => undefined);
  };

  const onLine = (line: string) => {
    if (!line.startsWith(MESSAGE_MARK)) {
      if (line === "") return;
      logs = `${logs}${line}\n`.slice(-MAX_LOG_CHARS);
      options.onLog?.(`${line}\n`);
      return;
    }
    const message = JSON.parse(line.slice(MESSAGE_MARK.length)) as HostMessage;
    if (message.type === "call") calls.push(answer(message));
    else {
      outcome =
        message.type === "result"
          ? { type: "ok", value: message.value }
          : { type: "error", message: message.message };
      void child.closeStdin().catch(() => undefined);
    }
  };

  const decoder = new TextDecoder();
  let buffered = "";
  for await (const bytes of child.stdout) {
    buffered += decoder.decode(bytes, { stream: true });
    let newline = buffered.indexOf("\n");
    while (newline >= 0) {
      onLine(buffered.slice(0, newline));
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf("\n");
    }
  }
  if (buffered) onLine(buffered);
  await Promise.all(calls);
  const result = await child.wait();
  await options.sandbox.removeFile(path).catch(() => false);
  if (stopped !== undefined) throw stopped;
  if (result.stderr.trim()) logs = `${logs}${result.stderr}`.slice(-MAX_LOG_CHARS);
  return {
    outcome: outcome ?? {
      type: "killed",
      reason: result.terminationReason === "exit" ? `exit ${result.exitCode}` : result.terminationReason,
    },
    logs,
    toolCalls,
  };
}
