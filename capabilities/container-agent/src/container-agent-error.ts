import { hasErrorMarker, PaiErrorBase, type PaiErrorOptions } from "@pai/errors";

const marker = Symbol.for("pai.error.ContainerAgentError");

/**
 * Every code a {@link ContainerAgentError} can carry.
 *
 * - `SANDBOX_PROTOCOL`: the connection to the agent is unusable — it closed, or sent something that is not
 *   a valid frame (oversize, unknown type, malformed payload). Every request in flight fails with it.
 * - `SANDBOX_SPAWN_FAILED`: the agent could not start a command (no such program, bad `cwd`, cannot switch
 *   to the requested user). `details.errno` / `details.errnoName` say why.
 * - `SANDBOX_FILE_FAILED`: the agent could not read or write a file (permission, not a regular file, too
 *   large). A missing file is not an error: `readFile` returns `null`.
 * - `SANDBOX_PORT_CLOSED`: nothing listens on the container's loopback port a connection was asked for
 *   (`AgentClient.connect`; the agent's connect was refused). `details.port` says which.
 * - `SANDBOX_CONNECT_FAILED`: the agent could not connect to that port for another reason (out of descriptors, too
 *   many connections). `details.errno` / `details.errnoName` say why.
 * - `INVALID_ARGUMENT`: the request cannot be encoded (a NUL in an argument, a file over the frame limit).
 * - `PREBUILT_BINARY_MISSING`: this package ships no `pai-agent` or `pai-egress-relay` for the architecture that
 *   must run it (the engine's, or this machine's); the message names it and the fix. `details.program`,
 *   `details.platform`, `details.architecture` say which. Nothing is compiled at run time.
 */
export type ContainerAgentErrorCode =
  | "SANDBOX_PROTOCOL"
  | "SANDBOX_SPAWN_FAILED"
  | "SANDBOX_FILE_FAILED"
  | "SANDBOX_PORT_CLOSED"
  | "SANDBOX_CONNECT_FAILED"
  | "INVALID_ARGUMENT"
  | "PREBUILT_BINARY_MISSING";

/**
 * The error `@pai/container-agent` throws on purpose. A member of PAI's error family (extending
 * `@pai/errors`' `PaiErrorBase`) with its own `Symbol.for('pai.error.ContainerAgentError')` marker:
 * `ContainerAgentError.isInstance(e)` recognizes it from any copy of this package and nothing else; it is not
 * a `PaiError`.
 */
export class ContainerAgentError extends PaiErrorBase<ContainerAgentErrorCode> {
  readonly [marker] = true;

  constructor(code: ContainerAgentErrorCode, message: string, options: PaiErrorOptions = {}) {
    super("ContainerAgentError", code, message, options);
  }

  /** True for a `ContainerAgentError` (or a subclass of it) from any copy of this package. */
  static isInstance(error: unknown): error is ContainerAgentError {
    return hasErrorMarker(error, marker);
  }

  /** True when `error` is a container agent error with the given code. */
  static hasCode(error: unknown, code: ContainerAgentErrorCode): error is ContainerAgentError {
    return ContainerAgentError.isInstance(error) && error.code === code;
  }
}

/** A `SANDBOX_PROTOCOL` error. Internal shorthand. */
export function protocolError(message: string, options: { cause?: unknown } = {}): ContainerAgentError {
  return new ContainerAgentError("SANDBOX_PROTOCOL", message, options);
}
