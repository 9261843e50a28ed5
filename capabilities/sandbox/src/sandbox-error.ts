import { hasErrorMarker, PaiErrorBase, type PaiErrorOptions } from "@pai/errors";

const marker = Symbol.for("pai.error.SandboxError");

/**
 * Every code a {@link SandboxError} carries: the codes `@pai/sandbox` throws.
 *
 * - `INVALID_ARGUMENT`: a bad argument (a NUL in a path, a file over a limit, a target of the wrong kind).
 * - `PATH_OUTSIDE_WORKSPACE`: a path (or an uploaded archive entry, or a symlink) leads out of the workspace.
 * - `NOT_FOUND`: a directory to download does not exist.
 * - `SANDBOX_SPAWN_FAILED`: the command could not start (no such program, bad `cwd`, unknown user).
 * - `SANDBOX_PROTOCOL`: the in-container agent or the command wrapper stopped speaking its protocol.
 * - `CONTAINER_FAILED`: the container failed under an operation (lost, stopped, a file script failed).
 * - `CAPABILITY_UNAVAILABLE`: the sandbox, its binding or the test run's sandbox pool is closed or unreachable.
 * - `IMAGE_UNAVAILABLE`: the sandbox image is not on an engine and could not be provided there (a given image is
 *   missing, or PAI's own could not be built: no base, a failed build); the message says what to do.
 * - `AGENT_REQUIRED`: ports and terminals (`openPort`, `openTerminal`) need the in-container agent, and the sandbox
 *   runs its commands with `docker exec` only (`dockerSandbox({ executor: "docker-exec" })`). While a lost agent
 *   is being restarted they fail with `SANDBOX_PROTOCOL` instead (a later call may succeed).
 * - `PREVIEWS_UNAVAILABLE`: `exposePort` was called where no runtime serves previews (a runtime whose HTTP handler
 *   is not mounted, or the facade used outside a runtime); serve them with the handler `createPaiHandler` makes.
 * - `INTERPRETER_UNAVAILABLE`: a code context cannot start: the image lacks its interpreter (python3 with IPython,
 *   node), it failed before it was ready, or the host lacks Node's TypeScript stripping; the message names what.
 * - `CHECKPOINT_MISMATCH`: a file's bytes did not hash to the digest the sandbox's checkpoint program claimed (the
 *   file changed while the checkpoint was taken, or a program tampered with the program's cache); nothing was
 *   recorded.
 */
export type SandboxErrorCode =
  | "INVALID_ARGUMENT"
  | "PATH_OUTSIDE_WORKSPACE"
  | "NOT_FOUND"
  | "SANDBOX_SPAWN_FAILED"
  | "SANDBOX_PROTOCOL"
  | "CONTAINER_FAILED"
  | "CAPABILITY_UNAVAILABLE"
  | "IMAGE_UNAVAILABLE"
  | "AGENT_REQUIRED"
  | "PREVIEWS_UNAVAILABLE"
  | "INTERPRETER_UNAVAILABLE"
  | "CHECKPOINT_MISMATCH";

/**
 * The error `@pai/sandbox` throws on purpose. A member of PAI's error family (extending `@pai/errors`'
 * `PaiErrorBase`) with its own `Symbol.for('pai.error.SandboxError')` marker: `SandboxError.isInstance(e)`
 * recognizes it from any copy of this package and nothing else; it is not a `PaiError`. Errors of the
 * packages below pass through as they are (`PoolError` from the container pool, `ContainerAgentError` from
 * the agent).
 */
export class SandboxError extends PaiErrorBase<SandboxErrorCode> {
  readonly [marker] = true;

  constructor(code: SandboxErrorCode, message: string, options: PaiErrorOptions = {}) {
    super("SandboxError", code, message, options);
  }

  /** True for a `SandboxError` (or a subclass of it) from any copy of this package. */
  static isInstance(error: unknown): error is SandboxError {
    return hasErrorMarker(error, marker);
  }

  /** True when `error` is a sandbox error with the given code. */
  static hasCode(error: unknown, code: SandboxErrorCode): error is SandboxError {
    return SandboxError.isInstance(error) && error.code === code;
  }
}
