import { describe, expect, it } from "vitest";
import { hasErrorMarker, PaiErrorBase, type PaiErrorOptions } from "./pai-error-base.ts";

const marker = Symbol.for("pai.error.QueueError");

class QueueError extends PaiErrorBase<"QUEUE_FULL" | "QUEUE_CLOSED"> {
  readonly [marker] = true;
  constructor(code: QueueError["code"], message: string, options?: PaiErrorOptions) {
    super("QueueError", code, message, options);
  }
  static isInstance(error: unknown): error is QueueError {
    return hasErrorMarker(error, marker);
  }
}

describe("PaiErrorBase", () => {
  it("carries the member's name, code, message, details and cause", () => {
    const cause = new Error("disk full");
    const error = new QueueError("QUEUE_FULL", "no room", { cause, details: { size: 8 } });
    expect(error).toBeInstanceOf(Error);
    expect([error.name, error.code, error.message, error.details, error.cause]).toEqual([
      "QueueError",
      "QUEUE_FULL",
      "no room",
      { size: 8 },
      cause,
    ]);
    expect(String(error)).toBe("QueueError: no room");
  });

  it("keeps the member's name in its subclasses", () => {
    class QueueGone extends QueueError {}
    expect(new QueueGone("QUEUE_CLOSED", "closed").name).toBe("QueueError");
  });

  it("serializes to the code and message, and the details only when there are some", () => {
    expect(JSON.parse(JSON.stringify(new QueueError("QUEUE_CLOSED", "closed")))).toEqual({
      code: "QUEUE_CLOSED",
      message: "closed",
    });
    expect(new QueueError("QUEUE_FULL", "no room", { details: { size: 8 } }).toJSON()).toEqual({
      code: "QUEUE_FULL",
      message: "no room",
      details: { size: 8 },
    });
  });

  it("recognizes a marker only on an object that carries it set to true", () => {
    expect(QueueError.isInstance(new QueueError("QUEUE_FULL", "no room"))).toBe(true);
    expect(hasErrorMarker({ [marker]: true }, marker)).toBe(true);
    for (const value of [{ [marker]: "true" }, { [marker]: 1 }, {}, null, undefined, "QueueError", 42]) {
      expect(hasErrorMarker(value, marker)).toBe(false);
    }
    expect(hasErrorMarker({ [marker]: true }, Symbol.for("pai.error.OtherError"))).toBe(false);
  });
});
