// @vitest-environment happy-dom
import { act } from "react";
import { createRoot } from "react-dom/client";
import { describe, expect, it } from "vitest";
import type { ChatMessage } from "./chat-message.ts";
import { MessageView } from "./message-view.tsx";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

describe("MessageView", () => {
  it("shows a note where the conversation's sandbox woke from hibernation, and nothing for other statuses", async () => {
    const message = {
      id: "m1",
      role: "assistant",
      parts: [
        {
          type: "data-pai-capability",
          data: { capability: "sandbox", lifetime: "thread", status: "provisioning" },
        },
        {
          type: "data-pai-capability",
          data: {
            capability: "sandbox",
            lifetime: "thread",
            status: "woken",
            resourceId: "c1",
            durationMs: 180,
          },
        },
      ],
    } as unknown as ChatMessage;
    const container = document.createElement("div");
    document.body.append(container);
    const root = createRoot(container);
    try {
      await act(async () =>
        root.render(<MessageView message={message} runStatus="completed" streaming={false} />),
      );
      const notes = [...container.querySelectorAll('[role="note"]')].map((note) => note.textContent);
      expect(notes).toEqual([
        "The sandbox had hibernated while idle and was woken (0.2 s): its files are kept, processes started before are gone.",
      ]);
    } finally {
      await act(async () => root.unmount());
      container.remove();
    }
  });
});
