import { hasErrorMarker, PaiErrorBase, type PaiErrorOptions } from "@pai/errors";

const marker = Symbol.for("pai.error.McpError");

/**
 * Every code an {@link McpError} carries: the codes `@pai/mcp` throws.
 *
 * - `INVALID_ARGUMENT`: a bad server description or option (no `url`/`command`, a sandbox server without
 *   `@pai/mcp/sandbox`).
 * - `MCP_CONNECT_FAILED`: the server could not be reached, started or initialized (the next call tries again).
 * - `MCP_TOOL_FAILED`: the server answered a call with `isError`, or refused it with a JSON-RPC error.
 * - `MCP_TIMEOUT`: a call (or the connection) got no answer within its time.
 * - `MCP_PROTOCOL`: the server broke the protocol: a line that is not JSON-RPC, a line over the length bound.
 * - `MCP_SERVER_EXITED`: the server's process ended (or its connection closed) while calls were waiting.
 * - `MCP_CLOSED`: the tool set was closed.
 */
export type McpErrorCode =
  | "INVALID_ARGUMENT"
  | "MCP_CONNECT_FAILED"
  | "MCP_TOOL_FAILED"
  | "MCP_TIMEOUT"
  | "MCP_PROTOCOL"
  | "MCP_SERVER_EXITED"
  | "MCP_CLOSED";

/** The error `@pai/mcp` throws on purpose; a tool call it fails reaches the model as a planned failure with this code. */
export class McpError extends PaiErrorBase<McpErrorCode> {
  readonly [marker] = true;

  constructor(code: McpErrorCode, message: string, options: PaiErrorOptions = {}) {
    super("McpError", code, message, options);
  }

  /** True for an `McpError`, also one from another copy of this package. */
  static isInstance(error: unknown): error is McpError {
    return hasErrorMarker(error, marker);
  }

  /** True when `error` is an McpError with the given code. */
  static hasCode(error: unknown, code: McpErrorCode): error is McpError {
    return McpError.isInstance(error) && error.code === code;
  }
}
