const failMarker = Symbol.for("pai.tool-fail");

/**
 * Thrown by `ctx.fail`: a planned failure the model sees, not a runtime error. A nested call (`ctx.tools.x`, a
 * code-mode program's tool call) that ends without an output rejects with one too, so that, left uncaught, it
 * fails its caller the same planned way.
 */
export class ToolFailSignal extends Error {
  readonly [failMarker] = true;
  /** Why, when known: `DENIED`, `CANCELLED`, `TOOL_DISABLED`, `INVALID_INPUT`, or the tool's own `ctx.fail` code. */
  readonly code: string | undefined;
  constructor(message: string, code?: string) {
    super(message);
    this.name = "ToolFailSignal";
    this.code = code;
  }
  static isInstance(error: unknown): error is ToolFailSignal {
    return (
      typeof error === "object" && error !== null && (error as Record<symbol, unknown>)[failMarker] === true
    );
  }
}

const suspendMarker = Symbol.for("pai.tool-suspend");

/**
 * Thrown by `ctx.suspend`: ends the step with a durable pending action. A nested call that now waits for an
 * answer (its own `ctx.suspend`, or one below it) rejects with one as well.
 */
export class ToolSuspendSignal extends Error {
  readonly [suspendMarker] = true;
  readonly payload: unknown;
  readonly suspendName: string;
  constructor(payload: unknown, suspendName: string) {
    super(`tool suspended at "${suspendName}"`);
    this.name = "ToolSuspendSignal";
    this.payload = payload;
    this.suspendName = suspendName;
  }
  static isInstance(error: unknown): error is ToolSuspendSignal {
    return (
      typeof error === "object" &&
      error !== null &&
      (error as Record<symbol, unknown>)[suspendMarker] === true
    );
  }
}

/**
 * Whether `error` says that the call it came from waits for an answer: the rejection of a nested call
 * (`ctx.tools.x(...)`, `ctx.agents.run(...)`) that suspended. Code that catches a nested call's errors lets it
 * go (or stops what it started): the top-level call becomes a pending action, and once it is answered the call
 * runs again, its settled nested calls answered from its journal.
 * @example
 * try { await ctx.tools.charge(input) } catch (error) { if (isToolSuspension(error)) throw error; ... }
 */
export function isToolSuspension(error: unknown): boolean {
  return ToolSuspendSignal.isInstance(error);
}
