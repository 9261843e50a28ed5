import type { UIMessage } from "ai";
import { describe, expect, it } from "vitest";
import { isPaiToolPart, toolIdOf, toolNameOf } from "./is-pai-tool-part.ts";
import { pendingActionFor, pendingActionsOf } from "./pending-actions-of.ts";
import { sampleAction, sampleMessage } from "./testing/sample-message.ts";
import { toolDataOf } from "./tool-data-of.ts";

describe("isPaiToolPart", () => {
  it("accepts static and dynamic tool parts and nothing else", () => {
    const message = sampleMessage();
    const dynamic: UIMessage["parts"][number] = {
      type: "dynamic-tool",
      toolName: "search",
      toolCallId: "c9",
      state: "input-available",
      input: {},
    };
    expect(message.parts.filter(isPaiToolPart).map((part) => part.toolCallId)).toEqual(["c1"]);
    expect(isPaiToolPart(dynamic)).toBe(true);
    expect(isPaiToolPart({ type: "text", text: "tool-ish" })).toBe(false);
    expect(isPaiToolPart({ type: "data-output", data: {} })).toBe(false);
  });

  it("reads the wire id from toolMetadata and falls back to the registration key", () => {
    const [part] = sampleMessage().parts.filter(isPaiToolPart);
    expect(toolIdOf(part!)).toBe("deploy.v2");
    expect(toolNameOf(part!)).toBe("deploy");
    expect(
      toolIdOf({ type: "tool-legacy", toolCallId: "c", state: "input-available", input: {} } as never),
    ).toBe("legacy");
  });
});

describe("tool data and pending actions of a message", () => {
  it("gathers a call's data parts in write order", () => {
    const items = toolDataOf(sampleMessage(), "c1");
    expect(items.map((item) => item.value)).toEqual(["hello ", "world\n"]);
    expect(items[0]).toMatchObject({ channel: "output", toolId: "deploy.v2", toolName: "deploy" });
  });

  it("keeps the latest state of each action and finds the one a call waits on", () => {
    const message = sampleMessage();
    expect(pendingActionFor(message, "c1")?.actionId).toBe("a1");
    message.parts.push({ type: "data-pai-action", id: "a1", data: sampleAction({ status: "resumed" }) });
    expect(pendingActionsOf(message).map((action) => action.status)).toEqual(["resumed"]);
    expect(pendingActionFor(message, "c1")).toBeUndefined();
  });
});
