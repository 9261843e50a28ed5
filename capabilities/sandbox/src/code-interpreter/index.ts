export type {
  CodeContext,
  CodeContextCallOptions,
  CodeError,
  CodeInterpreter,
  CodeLanguage,
  CodeResult,
  CodeTerminationReason,
  CreateCodeContextOptions,
  RunCodeOptions,
  RunCodeResult,
} from "./code-context.ts";
export {
  type CodeInterpreterModelOutputOptions,
  codeInterpreterModelOutput,
} from "./code-interpreter-model-output.ts";
export {
  type CodeInterpreterOutput,
  codeInterpreterOutputSchema,
  codeResultSchema,
} from "./code-interpreter-output.ts";
export {
  type CodeInterpreterToolOptions,
  defineCodeInterpreterTool,
} from "./define-code-interpreter-tool.ts";
