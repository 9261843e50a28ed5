// @vitest-environment happy-dom
import { Assistant, isPaiToolPart } from "@pai/react";
import { act } from "react";
import { createRoot, type Root } from "react-dom/client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ChatMessage } from "./chat-message.ts";
import { PreviewCard } from "./preview-card.tsx";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const INPUT = { command: "python3 -m http.server 8000", port: 8000 };
const URL_WITH_TOKEN = "http://p1a2b3.localhost:3000/?pai_preview_token=secret";

/** A `startServer` call: running, done with a preview, or failed. */
function serverMessage(outcome: { output: unknown } | { errorText: string } | undefined): ChatMessage {
  const state =
    outcome === undefined
      ? { state: "input-available" }
      : "output" in outcome
        ? { state: "output-available", output: outcome.output }
        : { state: "output-error", errorText: outcome.errorText };
  return {
    id: "m1",
    role: "assistant",
    parts: [
      {
        type: "tool-startServer",
        toolCallId: "c1",
        toolMetadata: { paiToolId: "startServer" },
        input: INPUT,
        ...state,
      },
    ],
  } as unknown as ChatMessage;
}

let container: HTMLElement;
let root: Root;
beforeEach(() => {
  container = document.createElement("div");
  document.body.append(container);
  root = createRoot(container);
});
afterEach(() => {
  act(() => root.unmount());
  container.remove();
});

function render(message: ChatMessage, runStatus?: "completed" | "cancelled"): HTMLElement {
  const part = message.parts.find(isPaiToolPart)!;
  act(() =>
    root.render(<Assistant.Tool message={message} part={part} card={PreviewCard} runStatus={runStatus} />),
  );
  return container.querySelector(".preview")!;
}

describe("PreviewCard", () => {
  it("says the server is starting while the call runs, with no frame yet", () => {
    const preview = render(serverMessage(undefined));
    expect(preview.getAttribute("data-preview")).toBe("starting");
    expect(preview.textContent).toBe("Starting the server and waiting for port 8000 to answer…");
    expect(container.querySelector(".run-script-command")!.textContent).toBe(INPUT.command);
    expect(container.querySelector("iframe")).toBeNull();
  });

  it("shows the live page in a sandboxed frame, its host, an Open link that leaks nothing, the port and expiry", () => {
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const preview = render(
      serverMessage({ output: { url: URL_WITH_TOKEN, port: 8000, expiresAt, command: INPUT.command } }),
    );
    expect(preview.getAttribute("data-preview")).toBe("live");
    const frame = preview.querySelector("iframe")!;
    expect(frame.getAttribute("src")).toBe(URL_WITH_TOKEN);
    expect(frame.getAttribute("sandbox")).toBe("allow-scripts allow-forms allow-same-origin");
    expect(frame.getAttribute("title")).toBe("Preview of port 8000");
    const open = preview.querySelector<HTMLAnchorElement>("a.preview-open")!;
    expect(open.getAttribute("href")).toBe(URL_WITH_TOKEN);
    expect(open.getAttribute("target")).toBe("_blank");
    expect(open.getAttribute("rel")).toBe("noopener noreferrer");
    // the address shows the host only, never the token
    expect(preview.querySelector(".preview-address")!.textContent).toBe("p1a2b3.localhost:3000");
    expect(preview.querySelector(".preview-meta")!.textContent).toMatch(/^port 8000 · open until \S/);
    expect(preview.querySelector("time")!.getAttribute("datetime")).toBe(expiresAt);
  });

  it("reloads the page by loading the frame afresh", () => {
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const preview = render(
      serverMessage({ output: { url: URL_WITH_TOKEN, port: 8000, expiresAt, command: INPUT.command } }),
    );
    const before = preview.querySelector("iframe");
    act(() => preview.querySelector<HTMLButtonElement>("button.preview-reload")!.click());
    const after = container.querySelector("iframe")!;
    expect(after).not.toBe(before);
    expect(after.getAttribute("src")).toBe(URL_WITH_TOKEN);
  });

  it("shows a preview past its expiry as closed, with no frame", () => {
    const expiresAt = new Date(Date.now() - 1000).toISOString();
    const preview = render(
      serverMessage({ output: { url: URL_WITH_TOKEN, port: 8000, expiresAt, command: INPUT.command } }),
    );
    expect(preview.getAttribute("data-preview")).toBe("expired");
    expect(preview.querySelector("iframe")).toBeNull();
    expect(preview.textContent).toMatch(/^The preview of port 8000 closed at /);
  });

  it("shows why the server did not start", () => {
    const reason =
      "`python3 -m http.server 8000` exited (exit 1) before port 8000 answered. Its output:\nboom";
    const preview = render(serverMessage({ errorText: reason }), "completed");
    expect(preview.getAttribute("data-preview")).toBe("failed");
    expect(container.querySelector(".pai-tool")!.getAttribute("data-status")).toBe("failed");
    expect(preview.querySelector(".pai-tool-error")!.textContent).toBe("The server did not start.");
    expect(preview.querySelector(".preview-reason")!.textContent).toBe(reason);
    expect(container.querySelector("iframe")).toBeNull();
  });

  it("says the server had not answered when the run was stopped before the port did (the badge says Stopped)", () => {
    const preview = render(serverMessage(undefined), "cancelled");
    expect(preview.getAttribute("data-preview")).toBe("stopped");
    expect(preview.textContent).toBe("The server had not answered yet.");
  });
});
