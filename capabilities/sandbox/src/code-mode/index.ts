export { defineCodeModeTool } from "./define-code-mode-tool.ts";
export { type CodeModeResult, runCodeModeProgram } from "./run-code-mode-program.ts";
export { toolSignatures } from "./tool-signatures.ts";
