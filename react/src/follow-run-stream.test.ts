import type { UIMessage, UIMessageChunk } from "ai";
import { describe, expect, it } from "vitest";
import { followRunStream, upsertMessage } from "./follow-run-stream.ts";
import { sampleAction, sampleMessage } from "./testing/sample-message.ts";

function sse(chunks: Array<Record<string, unknown>>): ReadableStream<Uint8Array> {
  const text = `${chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join("")}data: [DONE]\n\n`;
  return new Response(text).body!;
}

const user: UIMessage = { id: "m1", role: "user", parts: [{ type: "text", text: "deploy api" }] };

describe("followRunStream", () => {
  it("applies a continuation to the suspended call's message", async () => {
    const seen: UIMessage[] = [];
    const final = await followRunStream({
      messages: [user, sampleMessage()],
      stream: sse([
        { type: "tool-output-available", toolCallId: "c1", output: { deployed: "api" } },
        { type: "data-pai-action", id: "a1", data: sampleAction({ status: "resumed" }) },
        { type: "start", messageId: "m2" },
        { type: "start-step" },
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "Deployed api." },
        { type: "text-end", id: "t" },
        { type: "finish-step" },
        { type: "finish" },
      ] satisfies UIMessageChunk[] as never),
      onMessage: (message) => seen.push(message),
    });
    expect(final?.id).toBe("m2");
    expect(final?.parts.find((part) => part.type === "tool-deploy")).toMatchObject({
      state: "output-available",
      output: { deployed: "api" },
    });
    expect(final?.parts.filter((part) => part.type === "data-pai-action")).toHaveLength(1);
    expect(final?.parts.at(-1)).toMatchObject({ type: "text", text: "Deployed api." });
    expect(final?.parts.filter((part) => part.type === "data-output")).toHaveLength(3);
    expect(seen.length).toBeGreaterThan(1);
  });

  it("writes a new message for a run started by a new user message", async () => {
    let messages: UIMessage[] = [user, sampleMessage()];
    await followRunStream({
      messages,
      stream: sse([
        { type: "start", messageId: "m4" },
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "Hi." },
        { type: "text-end", id: "t" },
        { type: "finish" },
      ]),
      onMessage: (message) => {
        messages = upsertMessage(messages, message);
      },
    });
    expect(messages.map((message) => message.id)).toEqual(["m1", "m2", "m4"]);
    expect(messages[1]!.parts).toHaveLength(7);
  });
});
