import { defineTool } from "@pai/core";
import { z } from "zod";
import { sandbox } from "../sandbox.ts";
import type { CodeLanguage } from "./code-context.ts";
import {
  type CodeInterpreterModelOutputOptions,
  codeInterpreterModelOutput,
} from "./code-interpreter-model-output.ts";
import { type CodeInterpreterOutput, codeInterpreterOutputSchema } from "./code-interpreter-output.ts";

/** Options of {@link defineCodeInterpreterTool}. */
export interface CodeInterpreterToolOptions extends CodeInterpreterModelOutputOptions {
  /** @default "codeInterpreter" */
  id?: string;
  /** @default a description of the languages, the state kept and the libraries */
  description?: string;
  /**
   * The languages the model may pick (`input.language`); the first is the default.
   * @default ["python", "javascript", "typescript"]
   */
  languages?: readonly [CodeLanguage, ...CodeLanguage[]];
  /** Interrupts a cell after this long (the context keeps its state). @default 60_000 */
  timeoutMs?: number;
  /** Characters of each output stream kept in the stored output (the tail). @default 100_000 */
  maxStoredLogChars?: number;
}

/** Keeps the tail of a stream's chunks, `max` characters at most. */
function keepTail(chunks: string[], max: number): string[] {
  const text = chunks.join("");
  if (text.length <= max) return chunks;
  return [`…(${text.length - max} characters cut)…\n${text.slice(-max)}`];
}

/**
 * A code interpreter tool over the conversation's sandbox: the model sends `{ code, language? }` and the code runs
 * in the default context of that language (`runCode`), so variables, imports and loaded data persist from one call
 * to the next. stdout and stderr stream to the UI as `output` tool data while it runs (`{ stream, text }`, as the
 * sandbox command tools stream theirs). The stored output keeps every representation of every result (see
 * {@link CodeInterpreterOutput}); the model gets text plus the PNG/JPEG results as images within a size budget
 * (`codeInterpreterModelOutput`), so it can look at a chart it drew. A context that had to start again (the sandbox
 * hibernated, its memory ran out) is named in what the model reads.
 * @example
 * const analyst = defineAgent({ tools: { python: defineCodeInterpreterTool({ languages: ["python"] }) } });
 */
export function defineCodeInterpreterTool(options: CodeInterpreterToolOptions = {}) {
  const languages = options.languages ?? (["python", "javascript", "typescript"] as const);
  const [defaultLanguage] = languages;
  const timeoutMs = options.timeoutMs ?? 60_000;
  const maxStoredLogChars = options.maxStoredLogChars ?? 100_000;
  const description =
    options.description ??
    [
      `Run ${languages.join(", ")} code in this conversation's sandbox (Linux, no network; files in /workspace).`,
      "State persists between calls of the same language: variables, imports and loaded data stay.",
      languages.includes("python")
        ? "Python runs in IPython (magics, `!shell`) with numpy, pandas and matplotlib: a figure shown or left open is returned as an image you can look at; the value of the last expression is returned."
        : "The value of the last expression is returned.",
      languages.some((language) => language !== "python")
        ? "JavaScript/TypeScript run in a persistent Node context with top-level await."
        : "",
    ]
      .filter(Boolean)
      .join(" ");

  return defineTool({
    id: options.id ?? "codeInterpreter",
    description,
    inputSchema: z.object({
      code: z.string().describe("The code of one cell"),
      language: z
        .enum(languages as unknown as [CodeLanguage, ...CodeLanguage[]])
        .optional()
        .describe(`Default: ${defaultLanguage}`),
    }),
    outputSchema: codeInterpreterOutputSchema,
    data: { output: z.object({ stream: z.enum(["stdout", "stderr"]), text: z.string() }) },
    capabilities: { sandbox },
    execute: async (ctx): Promise<CodeInterpreterOutput> => {
      // chunks are written one after another, in order
      let writes: Promise<void> = Promise.resolve();
      const stream = (name: "stdout" | "stderr") => (text: string) => {
        writes = writes.then(() => ctx.data.write("output", { stream: name, text }));
      };
      const language = ctx.input.language ?? defaultLanguage;
      const result = await ctx.capabilities.sandbox.runCode(ctx.input.code, {
        language,
        timeoutMs,
        signal: ctx.signal,
        onStdout: stream("stdout"),
        onStderr: stream("stderr"),
      });
      await writes;
      return {
        language,
        contextId: result.context.id,
        results: result.results,
        logs: {
          stdout: keepTail(result.logs.stdout, maxStoredLogChars),
          stderr: keepTail(result.logs.stderr, maxStoredLogChars),
        },
        ...(result.error ? { error: result.error } : {}),
        executionCount: result.executionCount,
        terminationReason: result.terminationReason,
        ...(result.restarted ? { restarted: true, restartReason: result.restartReason ?? "" } : {}),
        durationMs: Math.round(result.durationMs),
      };
    },
    toModelOutput: ({ output }) => codeInterpreterModelOutput(output, options),
  });
}
