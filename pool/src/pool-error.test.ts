import { describe, expect, it } from "vitest";
import { PoolError } from "./pool-error.ts";

describe("PoolError", () => {
  it("carries the PAI marker that core's PaiError.isInstance checks", () => {
    const error = new PoolError("POOL_EXHAUSTED", "no container", { details: { max: 2 } });
    expect((error as unknown as Record<symbol, unknown>)[Symbol.for("pai.error")]).toBe(true);
    expect(error.code).toBe("POOL_EXHAUSTED");
    expect(error.toJSON()).toEqual({ code: "POOL_EXHAUSTED", message: "no container", details: { max: 2 } });
  });

  it("recognizes pool errors from another copy of the package, but not other PAI errors", () => {
    const copy = { [Symbol.for("pai.error")]: true, code: "POOL_CLOSED", message: "closed" };
    expect(PoolError.isInstance(copy)).toBe(true);
    expect(PoolError.hasCode(copy, "POOL_CLOSED")).toBe(true);
    expect(PoolError.isInstance({ [Symbol.for("pai.error")]: true, code: "TOOL_DISABLED" })).toBe(false);
    expect(PoolError.isInstance(new Error("x"))).toBe(false);
  });
});
