import { PaiError } from "@pai/core";
import { describe, expect, it } from "vitest";
import { BrowserError } from "./browser-error.ts";

describe("BrowserError", () => {
  it("is its own class of PAI error and keeps its code, details and cause", () => {
    const cause = new Error("net::ERR_CONNECTION_REFUSED");
    const error = new BrowserError("BROWSER_NAVIGATION_FAILED", "goto failed", {
      cause,
      details: { url: "http://127.0.0.1:1/" },
    });
    expect(BrowserError.isInstance(error)).toBe(true);
    expect(BrowserError.hasCode(error, "BROWSER_NAVIGATION_FAILED")).toBe(true);
    expect(PaiError.isInstance(error)).toBe(false);
    expect(BrowserError.isInstance(new PaiError("NOT_FOUND", "x"))).toBe(false);
    expect(error.cause).toBe(cause);
    expect(JSON.parse(JSON.stringify(error))).toEqual({
      code: "BROWSER_NAVIGATION_FAILED",
      message: "goto failed",
      details: { url: "http://127.0.0.1:1/" },
    });
  });
});
