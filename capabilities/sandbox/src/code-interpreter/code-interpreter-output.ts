import { z } from "zod";

/** A result as the tool stores it: every representation the code displayed (see `CodeResult`). */
export const codeResultSchema = z.object({
  isMainResult: z.boolean(),
  text: z.string().optional(),
  html: z.string().optional(),
  markdown: z.string().optional(),
  svg: z.string().optional(),
  png: z.string().optional(),
  jpeg: z.string().optional(),
  json: z.unknown().optional(),
  latex: z.string().optional(),
  javascript: z.string().optional(),
  extra: z.record(z.string(), z.unknown()).optional(),
});

/**
 * The stored output of `defineCodeInterpreterTool`: what `runCode` returned (every result with every
 * representation, the logs, the error), with the language and context it ran in. A UI renders it as it is; the model
 * sees `codeInterpreterModelOutput` of it.
 */
export const codeInterpreterOutputSchema = z.object({
  language: z.enum(["python", "javascript", "typescript"]),
  contextId: z.string(),
  results: z.array(codeResultSchema),
  logs: z.object({ stdout: z.array(z.string()), stderr: z.array(z.string()) }),
  error: z.object({ name: z.string(), value: z.string(), traceback: z.string() }).optional(),
  executionCount: z.number(),
  terminationReason: z.enum(["completed", "timeout", "abort", "context-exited"]),
  restarted: z.boolean().optional(),
  restartReason: z.string().optional(),
  durationMs: z.number(),
});

/** The stored output of `defineCodeInterpreterTool`. */
export type CodeInterpreterOutput = z.infer<typeof codeInterpreterOutputSchema>;
