import type { UIMessage } from "ai";
import { describe, expect, it } from "vitest";
import { placeActionParts } from "./place-action-parts.ts";
import { sampleAction, sampleMessage } from "./testing/sample-message.ts";

describe("placeActionParts", () => {
  it("moves an action streamed in a later message to the message holding its call", () => {
    const earlier = sampleMessage();
    const cancelled = sampleAction({ status: "cancelled" });
    const later: UIMessage = {
      id: "m4",
      role: "assistant",
      parts: [
        { type: "data-pai-action", id: "a1", data: cancelled },
        { type: "text", text: "Sure, something else." },
      ],
    };
    const user: UIMessage = { id: "m3", role: "user", parts: [{ type: "text", text: "never mind" }] };
    const placed = placeActionParts([earlier, user, later]);
    const actions = placed[0]!.parts.filter((part) => part.type === "data-pai-action");
    expect(actions).toEqual([{ type: "data-pai-action", id: "a1", data: cancelled }]);
    expect(placed[2]!.parts).toEqual([{ type: "text", text: "Sure, something else." }]);
    expect(placed[1]).toBe(user);
  });

  it("leaves a conversation whose actions sit beside their calls as it is", () => {
    const messages = [sampleMessage()];
    expect(placeActionParts(messages)).toBe(messages);
  });

  it("keeps an action whose call is in no message where it is", () => {
    const lone: UIMessage = {
      id: "m9",
      role: "assistant",
      parts: [
        { type: "data-pai-action", id: "a9", data: sampleAction({ actionId: "a9", toolCallId: "gone" }) },
      ],
    };
    const messages = [lone];
    expect(placeActionParts(messages)).toBe(messages);
  });
});
