import { InvalidToolInputError, NoSuchToolError } from "ai";
import { PaiError } from "../errors/pai-error.ts";

/** What the model is told when a tool failed unexpectedly. */
export const GENERIC_TOOL_ERROR = "The tool failed unexpectedly. The error was reported to the operators.";

/** The error a tool call ends with. Its message is already safe for the model and the client. */
export class ToolCallError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ToolCallError";
  }
  /** The AI SDK gives the model `error.toString()`: keep it to the message alone. */
  override toString(): string {
    return this.message;
  }
}

/** What a client is told about an error: safe messages pass, anything unplanned is redacted. */
export function redactedMessage(error: unknown): string {
  if (error instanceof ToolCallError) return error.message;
  if (NoSuchToolError.isInstance(error) || InvalidToolInputError.isInstance(error)) return error.message;
  if (PaiError.isInstance(error) && isClientFacing(error.code)) return error.message;
  return "An internal error occurred. It was reported to the operators.";
}

function isClientFacing(code: PaiError["code"]): boolean {
  return code === "TOOL_DISABLED" || code === "THREAD_BUSY";
}
