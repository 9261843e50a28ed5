import { describe, expect, it } from "vitest";
import { PoolError } from "./pool-error.ts";

describe("PoolError", () => {
  it("keeps its code, details and cause", () => {
    const cause = new Error("connect ENOENT /var/run/docker.sock");
    const error = new PoolError("POOL_EXHAUSTED", "no container", { cause, details: { max: 2 } });
    expect(error.name).toBe("PoolError");
    expect(error.cause).toBe(cause);
    expect(PoolError.hasCode(error, "POOL_EXHAUSTED")).toBe(true);
    expect(PoolError.hasCode(error, "POOL_CLOSED")).toBe(false);
    expect(error.toJSON()).toEqual({ code: "POOL_EXHAUSTED", message: "no container", details: { max: 2 } });
  });

  it("recognizes a pool error from another copy of the package by its own marker, and nothing else", () => {
    const copy = { [Symbol.for("pai.error.PoolError")]: true, code: "POOL_CLOSED", message: "closed" };
    expect(PoolError.isInstance(copy)).toBe(true);
    expect(PoolError.hasCode(copy, "POOL_CLOSED")).toBe(true);
    // the marker all PAI errors used to share, with a pool code, is not a PoolError
    expect(PoolError.isInstance({ [Symbol.for("pai.error")]: true, code: "POOL_CLOSED" })).toBe(false);
    expect(PoolError.isInstance(Object.assign(new Error("x"), { code: "POOL_CLOSED" }))).toBe(false);
  });
});
