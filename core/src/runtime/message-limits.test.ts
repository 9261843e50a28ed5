import { describe, expect, it } from "vitest";
import { messageLimits } from "./message-limits.ts";

const text = (value: string) => ({ type: "text" as const, text: value });
const message = (parts: Array<ReturnType<typeof text>>) => ({ id: "m", role: "user" as const, parts });

describe("messageLimits", () => {
  it("accepts a message, an answer and clientData within the defaults", () => {
    const limits = messageLimits();
    expect(() => limits.checkRun({ message: message([text("hi")]), clientData: { page: 1 } })).not.toThrow();
    expect(() => limits.checkRun({ message: "x".repeat(256 * 1024) })).not.toThrow();
    expect(() => limits.checkAnswer({ answer: { type: "deny", reason: "no" } })).not.toThrow();
  });

  it("counts a message's size in UTF-8 bytes, not characters", () => {
    const limits = messageLimits({ maxMessageBytes: 10 });
    expect(() => limits.checkRun({ message: "aaaaaaaaaa" })).not.toThrow();
    expect(() => limits.checkRun({ message: "ééééééé" })).toThrow(
      expect.objectContaining({ code: "MESSAGE_TOO_LARGE", details: { bytes: 14, maxBytes: 10 } }),
    );
  });

  it("refuses a message with more parts than maxMessageParts", () => {
    const limits = messageLimits({ maxMessageParts: 2 });
    expect(() => limits.checkRun({ message: message([text("a"), text("b")]) })).not.toThrow();
    expect(() => limits.checkRun({ message: message([text("a"), text("b"), text("c")]) })).toThrow(
      expect.objectContaining({ code: "TOO_MANY_PARTS", details: { parts: 3, maxMessageParts: 2 } }),
    );
  });

  it("gives answers and clientData their own caps", () => {
    const limits = messageLimits({ maxAnswerBytes: 50, maxClientDataBytes: 20 });
    expect(() => limits.checkAnswer({ answer: { type: "fail", message: "x".repeat(60) } })).toThrow(
      expect.objectContaining({ code: "ANSWER_TOO_LARGE" }),
    );
    expect(() => limits.checkAnswer({ answer: { type: "cancel" }, clientData: "y".repeat(30) })).toThrow(
      expect.objectContaining({ code: "CLIENT_DATA_TOO_LARGE" }),
    );
    expect(() => limits.checkRun({ message: "hi", clientData: "y".repeat(30) })).toThrow(
      expect.objectContaining({ code: "CLIENT_DATA_TOO_LARGE" }),
    );
  });

  it("refuses clientData that is not JSON", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => messageLimits().checkRun({ message: "hi", clientData: cyclic })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
  });

  it("refuses a limit that is not a positive whole number", () => {
    expect(() => messageLimits({ maxMessageParts: 0 })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
    expect(() => messageLimits({ maxMessageBytes: 1.5 })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
  });
});
