import { APICallError } from "@ai-sdk/provider";
import { PaiResponseError } from "@pai/react";
import { describe, expect, it } from "vitest";
import { refusalOf } from "./refusal-of.ts";

/** What `useChat`'s transport throws for an error response (its `createUIApiCallError`). */
function callError(statusCode: number, responseBody: string): APICallError {
  return new APICallError({
    message: responseBody,
    url: "/api/chat",
    requestBodyValues: undefined,
    statusCode,
    responseBody,
  });
}

describe("refusalOf", () => {
  it("reads the handler's code and message from useChat's error for a refused request", () => {
    const body = JSON.stringify({
      error: { code: "THREAD_BUSY", message: "thread t1 already has a run in progress" },
    });
    expect(refusalOf(callError(409, body))).toEqual({
      code: "THREAD_BUSY",
      message: "thread t1 already has a run in progress",
    });
  });

  it("names the status when the body is not the handler's JSON", () => {
    expect(refusalOf(callError(502, "Bad Gateway"))).toEqual({ code: "HTTP_502", message: "Bad Gateway" });
    expect(refusalOf(callError(500, ""))).toEqual({ code: "HTTP_500", message: "HTTP 500" });
    expect(refusalOf(callError(404, "{}"))).toEqual({ code: "HTTP_404", message: "HTTP 404" });
  });

  it("takes a PaiResponseError's code and message", () => {
    const error = new PaiResponseError({ code: "UNKNOWN_MESSAGE", message: "no message m9", status: 404 });
    expect(refusalOf(error)).toEqual({ code: "UNKNOWN_MESSAGE", message: "no message m9" });
  });

  it("is undefined for what is not a refusal: a broken stream, a network failure", () => {
    expect(refusalOf(new TypeError("Failed to fetch"))).toBeUndefined();
    expect(refusalOf(new Error("stream ended"))).toBeUndefined();
    expect(refusalOf("THREAD_BUSY")).toBeUndefined();
  });
});
