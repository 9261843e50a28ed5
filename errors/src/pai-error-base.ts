/** What a member of PAI's error family takes beside its code and message. */
export interface PaiErrorOptions {
  /** The error that caused this one. */
  cause?: unknown;
  /** Extra facts for logs and typed HTTP bodies; never secrets. */
  details?: Record<string, unknown>;
}

/** What `toJSON()` of a member of PAI's error family returns. */
export interface PaiErrorJson<CODE extends string> {
  code: CODE;
  message: string;
  details?: Readonly<Record<string, unknown>>;
}

/**
 * The base of PAI's error family: `PaiError` (`@pai/core`), `PoolError` (`@pai/pool`), `SandboxError`
 * (`@pai/sandbox`), `BrowserError` (`@pai/browser`), `ContainerAgentError` (`@pai/container-agent`),
 * `PaiResponseError` (`@pai/react`) and `McpError` (`@pai/mcp`) extend it, so every member has the same shape:
 * `name`, `code`, `message`, `details`, `cause`, `toJSON()`.
 *
 * The family follows the AI SDK's pattern: each member carries its own `Symbol.for('pai.error.<Name>')` marker and
 * has a static `isInstance` that checks it with {@link hasErrorMarker}, so that it works across duplicated copies of
 * a package and never confuses two members. The base has no marker: nothing recognizes "any PAI error", and
 * `instanceof PaiErrorBase` holds only within one copy of this package.
 *
 * @example
 * ```ts
 * const marker = Symbol.for("pai.error.QueueError");
 * export class QueueError extends PaiErrorBase<"QUEUE_FULL" | "QUEUE_CLOSED"> {
 *   readonly [marker] = true;
 *   constructor(code: QueueError["code"], message: string, options?: PaiErrorOptions) {
 *     super("QueueError", code, message, options);
 *   }
 *   static isInstance(error: unknown): error is QueueError {
 *     return hasErrorMarker(error, marker);
 *   }
 * }
 * ```
 */
export abstract class PaiErrorBase<CODE extends string = string> extends Error {
  /** What went wrong. */
  readonly code: CODE;
  /** Extra facts for logs and typed HTTP bodies (ids, paths, limits, errno); never secrets. */
  readonly details: Readonly<Record<string, unknown>> | undefined;

  /** `name` is the member's class name, which stays the same in its subclasses. */
  protected constructor(name: string, code: CODE, message: string, options: PaiErrorOptions = {}) {
    super(message, { cause: options.cause });
    this.name = name;
    this.code = code;
    this.details = options.details;
  }

  /** The code and message, and the details when there are any. */
  toJSON(): PaiErrorJson<CODE> {
    return this.details
      ? { code: this.code, message: this.message, details: this.details }
      : { code: this.code, message: this.message };
  }
}

/** True when `error` is an object carrying `marker` (a member's `Symbol.for('pai.error.<Name>')`) set to `true`. */
export function hasErrorMarker(error: unknown, marker: symbol): boolean {
  return typeof error === "object" && error !== null && (error as Record<symbol, unknown>)[marker] === true;
}
