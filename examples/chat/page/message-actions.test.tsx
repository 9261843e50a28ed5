// @vitest-environment happy-dom
import { act } from "react";
import { createRoot, type Root } from "react-dom/client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ChatMessage } from "./chat-message.ts";
import { MessageActions, type MessageActionsProps } from "./message-actions.tsx";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const answer = {
  id: "a1",
  role: "assistant",
  parts: [{ type: "text", text: "Deleted `fib.py`." }],
} as unknown as ChatMessage;

let container: HTMLElement;
let root: Root;
beforeEach(() => {
  container = document.createElement("div");
  document.body.append(container);
  root = createRoot(container);
});
afterEach(async () => {
  await act(async () => root.unmount());
  container.remove();
});

async function render(props: MessageActionsProps): Promise<void> {
  await act(async () => root.render(<MessageActions {...props} />));
}

/** Each button's accessible name (its `aria-label`, else its text). */
function names(): string[] {
  return [...container.querySelectorAll("button")].map(
    (button) => button.getAttribute("aria-label") ?? button.textContent ?? "",
  );
}

describe("MessageActions", () => {
  it("offers only Copy unless Edit, Regenerate or Fork from here is offered", async () => {
    await render({ message: answer });
    expect(names()).toEqual(["Copy the reply"]);
  });

  it("names Edit, Regenerate and Fork from here, and calls each", async () => {
    const calls: string[] = [];
    await render({
      message: answer,
      onEdit: () => calls.push("edit"),
      onRegenerate: () => calls.push("regenerate"),
      onFork: () => calls.push("fork"),
    });
    expect(names()).toEqual(["Copy the reply", "Edit message", "Regenerate", "Fork from here"]);
    for (const action of ["edit", "regenerate", "fork"]) {
      await act(async () => container.querySelector<HTMLButtonElement>(`[data-action="${action}"]`)!.click());
    }
    expect(calls).toEqual(["edit", "regenerate", "fork"]);
  });

  it("says Forking… and takes no second press while a fork is made", async () => {
    const calls: string[] = [];
    await render({ message: answer, onFork: () => calls.push("fork"), forking: true });
    const fork = container.querySelector<HTMLButtonElement>('[data-action="fork"]')!;
    expect(fork.textContent).toBe("Forking…");
    expect(fork.getAttribute("aria-disabled")).toBe("true");
    await act(async () => fork.click());
    expect(calls).toEqual([]);
  });

  it("shows why an action was refused, even on a message with no text", async () => {
    const calls = { message: { id: "a2", role: "assistant", parts: [] } as unknown as ChatMessage };
    await render({ ...calls, refusal: "thread t1 already has a run in progress" });
    expect(container.querySelector('[role="alert"]')?.textContent).toBe(
      "thread t1 already has a run in progress",
    );
    expect(names()).toEqual([]);
  });
});
