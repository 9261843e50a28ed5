import type { RuntimeErrorInfo } from "@pai/core";

/**
 * An `onRuntimeError` for the examples: one line on stderr naming where the error happened (agent, thread, run,
 * tool call, phase), its code when it has one (any PAI error), and its message, then the stack. The client only sees
 * "reported to the operators"; this is that report.
 * @example
 * defineAgent({ tools, onRuntimeError: logRuntimeError("[pai chat]") });
 */
export function logRuntimeError(
  prefix: string,
  write: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): (error: unknown, info: RuntimeErrorInfo) => void {
  return (error, info) => {
    const where = [
      `agent=${info.agentId}`,
      `thread=${info.threadId}`,
      `run=${info.runId}`,
      ...(info.toolName ? [`tool=${info.toolName}`] : []),
      ...(info.toolCallId ? [`call=${info.toolCallId}`] : []),
      `phase=${info.phase}`,
    ].join(" ");
    const code = (error as { code?: unknown } | null)?.code;
    const message = error instanceof Error ? error.message : String(error);
    const details = (error as { details?: unknown } | null)?.details;
    write(
      `${prefix} runtime error ${where}: ${typeof code === "string" ? `${code} ` : ""}${message}` +
        (details && typeof details === "object" ? ` ${JSON.stringify(details)}` : ""),
    );
    if (error instanceof Error && error.stack) write(error.stack);
  };
}
