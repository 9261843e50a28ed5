import type { UIMessageChunk } from "ai";

const tty = process.stdout.isTTY === true;
const paint = (code: string) => (text: string) => (tty ? `\u001b[${code}m${text}\u001b[0m` : text);
export const dim = paint("2");
export const bold = paint("1");
export const green = paint("32");
export const red = paint("31");
export const yellow = paint("33");
export const cyan = paint("36");

/** What the view counted while rendering, for the summary. */
export interface ViewCounts {
  steps: number;
  commands: number;
  toolCalls: number;
}

/** Renders a run's UI message stream to the terminal: text, tool calls, streamed command output, approvals. */
export async function renderRun(stream: ReadableStream<UIMessageChunk>, counts: ViewCounts): Promise<void> {
  const write = (text: string) => process.stdout.write(text);
  const toolNames = new Map<string, string>();
  let atLineStart = true;
  const line = (text: string) => {
    write(`${atLineStart ? "" : "\n"}${text}\n`);
    atLineStart = true;
  };
  for await (const chunk of stream) {
    switch (chunk.type) {
      case "start-step":
        counts.steps += 1;
        break;
      case "text-delta":
        write(chunk.delta);
        atLineStart = chunk.delta.endsWith("\n");
        break;
      case "tool-input-available": {
        counts.toolCalls += 1;
        toolNames.set(chunk.toolCallId, chunk.toolName);
        const input = chunk.input as Record<string, unknown>;
        if (chunk.toolName === "runCommand") {
          counts.commands += 1;
          line(cyan(`$ ${String(input.command)}`));
        } else if (chunk.toolName === "writeFile") {
          line(cyan(`✎ write ${String(input.path)}`) + dim(` (${String(input.content ?? "").length} chars)`));
        } else if (chunk.toolName === "codeInterpreter") {
          line(cyan(`⌨ ${String(input.language ?? "python")} cell`));
          for (const codeLine of String(input.code ?? "").split("\n")) line(cyan(`  » ${codeLine}`));
        } else {
          line(cyan(`▶ ${chunk.toolName} ${JSON.stringify(input)}`));
        }
        break;
      }
      case "tool-output-available": {
        const output = chunk.output as Record<string, unknown>;
        const name = toolNames.get(chunk.toolCallId);
        if (name === "runCommand") {
          const ok = output.exitCode === 0;
          line(
            (ok ? green : red)(`  ↳ exit ${String(output.exitCode)} in ${String(output.durationMs)} ms`) +
              (ok ? "" : dim(` (${String(output.terminationReason)})`)),
          );
        } else if (name === "writeFile") {
          line(green(`  ↳ wrote ${String(output.bytes)} bytes`));
        } else if (name === "codeInterpreter") {
          line(describeCell(output));
        } else {
          line(green(`  ↳ ${JSON.stringify(output)}`));
        }
        break;
      }
      case "tool-output-error":
        line(red(`  ↳ failed: ${chunk.errorText}`));
        break;
      case "tool-input-error":
        line(red(`  ↳ rejected: ${chunk.errorText}`));
        break;
      case "error":
        line(red(`error: ${chunk.errorText}`));
        break;
      default:
        if (chunk.type === "data-output") {
          const { value } = (chunk as { data: { value: { stream: string; text: string } } }).data;
          for (const text of value.text.split(/(?<=\n)/)) {
            if (text === "") continue;
            write(`${atLineStart ? dim("  │ ") : ""}${value.stream === "stderr" ? yellow(text) : text}`);
            atLineStart = text.endsWith("\n");
          }
        } else if (chunk.type === "data-pai-capability") {
          const { data } = chunk as {
            data: {
              capability: string;
              status: string;
              durationMs?: number;
              resourceId?: string;
              error?: string;
            };
          };
          if (data.status === "provisioning")
            line(dim(`  … provisioning a ${data.capability} for this conversation`));
          if (data.status === "ready") {
            line(
              dim(
                `  … ${data.capability} ${data.resourceId?.slice(0, 12)} ready in ${data.durationMs} ms (from the warm pool)`,
              ),
            );
          }
          if (data.status === "failed")
            line(red(`  … ${data.capability} could not be provisioned: ${data.error ?? "no reason given"}`));
        }
    }
  }
  if (!atLineStart) write("\n");
}

/** How a code interpreter call ended, on one line: what it displayed (images by kind and size), or its exception. */
function describeCell(output: Record<string, unknown>): string {
  const results = (output.results ?? []) as Array<Record<string, unknown>>;
  const shown = results.map((result) => {
    const image = (["png", "jpeg", "svg"] as const).find((kind) => typeof result[kind] === "string");
    if (image) return `a ${image} image (${Math.round((String(result[image]).length * 3) / 4 / 1024)} KiB)`;
    if (typeof result.html === "string") return "an HTML table";
    return "text";
  });
  const error = output.error as { name: string; value: string } | undefined;
  const summary = `  ↳ [${String(output.executionCount)}] ${shown.length > 0 ? `displayed ${shown.join(", ")}` : "nothing displayed"} in ${String(output.durationMs)} ms`;
  return error ? red(`${summary}; raised ${error.name}: ${error.value}`) : green(summary);
}
