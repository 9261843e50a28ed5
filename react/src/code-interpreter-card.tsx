import type { ReactNode } from "react";
import { sanitizeHtml } from "./sanitize-html.ts";
import type { ToolCardProps } from "./tool-card.ts";
import { ToolCardFrame } from "./tool-card-frame.tsx";
import type { ToolDataItem } from "./tool-data-of.ts";
import { ToolEndNote } from "./tool-end-note.tsx";

/** One result of a cell as the code interpreter tool stores it (`@pai/sandbox`'s `CodeResult`). */
interface CellResult {
  isMainResult?: boolean;
  text?: string;
  html?: string;
  markdown?: string;
  svg?: string;
  png?: string;
  jpeg?: string;
  latex?: string;
}

/** What the card reads of the tool's stored output (`@pai/sandbox`'s `CodeInterpreterOutput`). */
interface CellOutput {
  language?: string;
  results?: CellResult[];
  logs?: { stdout?: string[]; stderr?: string[] };
  error?: { name: string; value: string; traceback: string };
  executionCount?: number;
  terminationReason?: string;
  restarted?: boolean;
  restartReason?: string;
  durationMs?: number;
}

/** A chunk of a stream, in the order the cell printed it. */
interface Chunk {
  stream: "stdout" | "stderr";
  text: string;
}

/** The streamed `output` tool data (`{ stream, text }`), else the stored logs (stdout, then stderr). */
function chunksOf(data: readonly ToolDataItem[], output: CellOutput | undefined): Chunk[] {
  const streamed = data.flatMap((item): Chunk[] => {
    const value = item.value as Partial<Chunk> | null;
    if (item.channel !== "output" || typeof value?.text !== "string") return [];
    return [{ stream: value.stream === "stderr" ? "stderr" : "stdout", text: value.text }];
  });
  if (streamed.length > 0 || !output?.logs) return streamed;
  return [
    ...(output.logs.stdout ?? []).map((text): Chunk => ({ stream: "stdout", text })),
    ...(output.logs.stderr ?? []).map((text): Chunk => ({ stream: "stderr", text })),
  ];
}

/** One result: an image (PNG, JPEG, SVG as an `<img>`, where no script of it runs), sanitised HTML, else text. */
function ResultView({ result }: { result: CellResult }): ReactNode {
  const main = result.isMainResult ? "" : undefined;
  const image = result.png
    ? `data:image/png;base64,${result.png}`
    : result.jpeg
      ? `data:image/jpeg;base64,${result.jpeg}`
      : result.svg
        ? `data:image/svg+xml;charset=utf-8,${encodeURIComponent(result.svg)}`
        : undefined;
  if (image) {
    return (
      <figure className="pai-code-result" data-kind="image" data-main={main}>
        <img src={image} alt={result.text ?? "an image the code displayed"} />
      </figure>
    );
  }
  const html = result.html !== undefined ? sanitizeHtml(result.html) : undefined;
  if (html !== undefined) {
    return (
      <div
        className="pai-code-result"
        data-kind="html"
        data-main={main}
        // biome-ignore lint/security/noDangerouslySetInnerHtml: rebuilt from an allow-list by sanitizeHtml
        dangerouslySetInnerHTML={{ __html: html }}
      />
    );
  }
  const text = result.text ?? result.markdown ?? result.latex;
  if (text === undefined) return null;
  return (
    <pre className="pai-code-result" data-kind="text" data-main={main}>
      {text}
    </pre>
  );
}

/**
 * The card of a code interpreter call (`defineCodeInterpreterTool` of `@pai/sandbox`): the cell's code, what it
 * prints as it streams (stderr marked), then what it displayed — charts and other images, HTML tables (sanitised by
 * {@link sanitizeHtml}: nothing in them runs or loads), text — and an exception with its traceback, with a note when
 * the context had to start again or the cell was interrupted. `<Assistant.Tool>` uses it for the tool id
 * `codeInterpreter`; register it for another id with `registerToolCard` or `<PaiProvider cards>`.
 * Class names (`pai-code-interpreter`, `pai-code-cell`, `pai-code-output`, `pai-code-result` with `data-kind`
 * `image | html | text`, `pai-code-error`, `pai-code-traceback`, `pai-code-footer`) are there to style it.
 */
export function CodeInterpreterCard(props: ToolCardProps): ReactNode {
  const { part, toolId, title, status, data } = props;
  const input = part.input as { code?: unknown; language?: unknown } | undefined;
  const output = part.state === "output-available" ? (part.output as CellOutput | undefined) : undefined;
  const language = output?.language ?? (typeof input?.language === "string" ? input.language : undefined);
  const chunks = chunksOf(data, output);
  return (
    <ToolCardFrame
      part={part}
      toolId={toolId}
      title={title}
      status={status}
      className="pai-code-interpreter"
      titleExtra={language ? <span className="pai-code-language">{language}</span> : null}
    >
      {typeof input?.code === "string" ? (
        <pre className="pai-code-cell" data-language={language}>
          <code>{input.code}</code>
        </pre>
      ) : null}
      {output?.restarted ? (
        <p className="pai-tool-note" data-note="restarted">
          {`The context started again, empty: ${output.restartReason ?? "its process was gone"}.`}
        </p>
      ) : null}
      {chunks.length > 0 ? (
        <pre className="pai-code-output">
          {chunks.map((chunk, index) => (
            // chunks only ever append
            // biome-ignore lint/suspicious/noArrayIndexKey: the index is the chunk's place in the stream
            <span key={index} data-stream={chunk.stream}>
              {chunk.text}
            </span>
          ))}
        </pre>
      ) : null}
      {output?.results?.map((result, index) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: results are a fixed list once stored
        <ResultView key={index} result={result} />
      ))}
      {output?.error ? (
        <div className="pai-code-error" role="alert">
          <p className="pai-tool-error">{`${output.error.name}: ${output.error.value}`}</p>
          {output.error.traceback ? <pre className="pai-code-traceback">{output.error.traceback}</pre> : null}
        </div>
      ) : null}
      {output ? (
        <footer className="pai-code-footer" data-termination={output.terminationReason}>
          {[
            output.executionCount ? `[${output.executionCount}]` : undefined,
            output.terminationReason && output.terminationReason !== "completed"
              ? INTERRUPTED[output.terminationReason]
              : undefined,
            output.durationMs !== undefined ? `${(output.durationMs / 1000).toFixed(2)} s` : undefined,
          ]
            .filter(Boolean)
            .join(" · ")}
        </footer>
      ) : null}
      <ToolEndNote status={status} />
    </ToolCardFrame>
  );
}

/** How an interrupted cell ended, as the footer says it. */
const INTERRUPTED: Record<string, string> = {
  timeout: "interrupted: time limit",
  abort: "interrupted",
  "context-exited": "the context's process ended",
};
