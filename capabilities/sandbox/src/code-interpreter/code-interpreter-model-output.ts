import type { ToolResultOutput } from "@ai-sdk/provider-utils";
import type { CodeInterpreterOutput } from "./code-interpreter-output.ts";

/** Options of {@link codeInterpreterModelOutput}. */
export interface CodeInterpreterModelOutputOptions {
  /**
   * Base64 characters of images the model gets in one result, all images together; those past it are named in the
   * text instead.
   * @default 4_000_000
   */
  maxImageBytes?: number;
  /** @default 4 */
  maxImages?: number;
  /** Characters of each text block (a stream's output, a representation, a traceback); the tail is kept. @default 8000 */
  maxTextChars?: number;
}

function tail(text: string, max: number): string {
  return text.length <= max ? text : `…(${text.length - max} characters cut)…\n${text.slice(-max)}`;
}

/**
 * What the model sees of a code interpreter call: text (the restart note, stdout, stderr, each result's text, the
 * error and its traceback, how the cell ended) and the `png`/`jpeg` results as image parts, within a size budget, so
 * the model can look at a chart it drew. The stored output keeps every representation.
 * @example
 * defineTool({ ..., toModelOutput: ({ output }) => codeInterpreterModelOutput(output) });
 */
export function codeInterpreterModelOutput(
  output: CodeInterpreterOutput,
  options: CodeInterpreterModelOutputOptions = {},
): ToolResultOutput {
  const maxImageBytes = options.maxImageBytes ?? 4_000_000;
  const maxImages = options.maxImages ?? 4;
  const maxText = options.maxTextChars ?? 8000;
  const lines: string[] = [];
  const images: Array<{ data: string; mediaType: string }> = [];
  let imageBytes = 0;

  if (output.restarted) {
    lines.push(
      `[the ${output.language} context was started again before this code ran, so variables and imports defined earlier are gone: ${output.restartReason ?? "its process had stopped"}]`,
    );
  }
  const stdout = output.logs.stdout.join("");
  const stderr = output.logs.stderr.join("");
  if (stdout) lines.push(`stdout:\n${tail(stdout, maxText)}`);
  if (stderr) lines.push(`stderr:\n${tail(stderr, maxText)}`);
  output.results.forEach((result, index) => {
    const label = result.isMainResult ? `Out[${output.executionCount}]` : `display ${index + 1}`;
    const image = result.png
      ? { data: result.png, mediaType: "image/png" }
      : result.jpeg
        ? { data: result.jpeg, mediaType: "image/jpeg" }
        : undefined;
    const parts: string[] = [];
    if (result.markdown) parts.push(tail(result.markdown, maxText));
    else if (result.text) parts.push(tail(result.text, maxText));
    else if (result.json !== undefined) parts.push(tail(JSON.stringify(result.json), maxText));
    else if (result.latex) parts.push(tail(result.latex, maxText));
    if (result.html && !result.text) parts.push(`(HTML) ${tail(result.html, maxText)}`);
    if (result.svg && !image) parts.push(`(SVG) ${tail(result.svg, maxText)}`);
    if (image) {
      if (images.length < maxImages && imageBytes + image.data.length <= maxImageBytes) {
        images.push(image);
        imageBytes += image.data.length;
        parts.push(`(${image.mediaType} image ${images.length}, attached below)`);
      } else {
        parts.push(`(${image.mediaType} image not attached: over the size budget)`);
      }
    }
    if (parts.length > 0) lines.push(`${label}: ${parts.join("\n")}`);
  });
  if (output.error) {
    lines.push(
      `error: ${output.error.name}: ${output.error.value}` +
        (output.error.traceback ? `\n${tail(output.error.traceback, maxText)}` : ""),
    );
  }
  if (output.terminationReason === "timeout")
    lines.push("[interrupted: the cell ran past its time limit; the context kept its state]");
  if (output.terminationReason === "abort") lines.push("[interrupted: the run was stopped]");
  if (lines.length === 0) lines.push("(no output)");

  return {
    type: "content",
    value: [
      { type: "text", text: lines.join("\n\n") },
      ...images.map((image) => ({
        type: "file" as const,
        mediaType: image.mediaType,
        data: { type: "data" as const, data: image.data },
      })),
    ],
  };
}
