const failMarker = Symbol.for("pai.tool-fail");

/** Thrown by `ctx.fail`: a planned failure the model sees. Not a runtime error. */
export class ToolFailSignal extends Error {
  readonly [failMarker] = true;
  readonly failCode: string | undefined;
  constructor(message: string, failCode?: string) {
    super(message);
    this.name = "ToolFailSignal";
    this.failCode = failCode;
  }
  static isInstance(error: unknown): error is ToolFailSignal {
    return (
      typeof error === "object" && error !== null && (error as Record<symbol, unknown>)[failMarker] === true
    );
  }
}

const suspendMarker = Symbol.for("pai.tool-suspend");

/** Thrown by `ctx.suspend`: ends the step with a durable pending action. */
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
