import { activeTelemetryFlags, inPaiSpan, paiMetrics } from "@pai/core";
import type { CommandResult, RunCommandOptions } from "./sandbox-facade.ts";

/**
 * Runs a sandbox command in a `pai.sandbox.command` span below the active context (the tool call's): its exit code,
 * why it ended, its output's bytes and its duration; the command's text only when the app opted in
 * (`telemetry.recordCommands`). A non-zero exit is a value, not a failure; a command that could not run fails the
 * span with its code. Each command that ran is counted on `pai.sandbox.commands`.
 */
export function traceCommand(
  command: Pick<RunCommandOptions, "command" | "args">,
  run: () => Promise<CommandResult>,
): Promise<CommandResult> {
  const text = activeTelemetryFlags().recordCommands
    ? [command.command, ...(command.args ?? [])].join(" ")
    : undefined;
  return inPaiSpan(
    "pai.sandbox.command",
    {
      attributes: { ...(text !== undefined ? { "pai.sandbox.command.text": text } : {}) },
      onResult(span, result) {
        paiMetrics().commands.add(1, { "pai.sandbox.termination": result.terminationReason });
        if (!span.isRecording()) return;
        span.setAttributes({
          "pai.sandbox.exit_code": result.exitCode,
          "pai.sandbox.termination": result.terminationReason,
          "pai.sandbox.stdout_bytes": Buffer.byteLength(result.stdout) + result.omittedBytes.stdout,
          "pai.sandbox.stderr_bytes": Buffer.byteLength(result.stderr) + result.omittedBytes.stderr,
          "pai.sandbox.duration_ms": result.durationMs,
        });
      },
    },
    run,
  );
}

/**
 * Runs a file transfer in a `pai.sandbox.files` span: `read` or `write`, how many files and bytes (no paths), and
 * its duration (the span's).
 */
export function traceFiles<T>(
  operation: "read" | "write",
  known: { files: number; bytes?: number },
  run: () => Promise<T>,
  bytesOf?: (result: T) => number,
): Promise<T> {
  return inPaiSpan(
    "pai.sandbox.files",
    {
      attributes: {
        "pai.sandbox.files.operation": operation,
        "pai.sandbox.files.count": known.files,
        ...(known.bytes !== undefined ? { "pai.sandbox.files.bytes": known.bytes } : {}),
      },
      ...(bytesOf
        ? { onResult: (span, result) => span.setAttribute("pai.sandbox.files.bytes", bytesOf(result)) }
        : {}),
    },
    run,
  );
}
