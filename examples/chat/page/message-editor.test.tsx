// @vitest-environment happy-dom
import { act } from "react";
import { createRoot, type Root } from "react-dom/client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { MessageEditor } from "./message-editor.tsx";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

let container: HTMLElement;
let root: Root;
let saved: string[];
let cancelled: number;
beforeEach(async () => {
  container = document.createElement("div");
  document.body.append(container);
  root = createRoot(container);
  saved = [];
  cancelled = 0;
  await act(async () =>
    root.render(
      <MessageEditor
        messageId="u1"
        draft="Show me the sandbox"
        onSave={(text) => saved.push(text)}
        onCancel={() => cancelled++}
      />,
    ),
  );
});
afterEach(async () => {
  await act(async () => root.unmount());
  container.remove();
});

const field = () => container.querySelector<HTMLTextAreaElement>("textarea")!;
const button = (name: string) =>
  [...container.querySelectorAll<HTMLButtonElement>("button")].find(
    (candidate) => candidate.textContent === name,
  )!;

/** Types `value` into the field as a person would (React sees an input event). */
async function type(value: string): Promise<void> {
  await act(async () => {
    const setter = Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, "value")!.set!;
    setter.call(field(), value);
    field().dispatchEvent(new Event("input", { bubbles: true }));
  });
}

async function press(key: string, init: KeyboardEventInit = {}): Promise<void> {
  await act(async () => {
    field().dispatchEvent(new KeyboardEvent("keydown", { key, bubbles: true, cancelable: true, ...init }));
  });
}

describe("MessageEditor", () => {
  it("opens on the message's text, focused and labelled", () => {
    expect(field().value).toBe("Show me the sandbox");
    expect(document.activeElement).toBe(field());
    expect(container.querySelector(`label[for="${field().id}"]`)?.textContent).toBe("Edit your message");
    expect(container.querySelector("article")?.dataset.messageId).toBe("u1");
  });

  it("saves the edited text with Enter, trimmed; Shift+Enter does not save", async () => {
    await type("  Show me the sandbox again \n");
    await press("Enter", { shiftKey: true });
    expect(saved).toEqual([]);
    await press("Enter");
    expect(saved).toEqual(["Show me the sandbox again"]);
  });

  it("saves with the Save button, which is off while the field is empty", async () => {
    await type("   ");
    expect(button("Save").disabled).toBe(true);
    await press("Enter");
    expect(saved).toEqual([]);
    await type("Plot a chart");
    await act(async () => button("Save").click());
    expect(saved).toEqual(["Plot a chart"]);
  });

  it("shows why the last save was refused", async () => {
    await act(async () =>
      root.render(
        <MessageEditor
          messageId="u1"
          draft="Show me the sandbox"
          onSave={() => {}}
          onCancel={() => {}}
          refusal="thread t1 already has a run in progress"
        />,
      ),
    );
    expect(container.querySelector('[role="alert"]')?.textContent).toBe(
      "thread t1 already has a run in progress",
    );
  });

  it("cancels with Escape and with Cancel, saving nothing", async () => {
    await press("Escape");
    await act(async () => button("Cancel").click());
    expect(cancelled).toBe(2);
    expect(saved).toEqual([]);
  });
});
