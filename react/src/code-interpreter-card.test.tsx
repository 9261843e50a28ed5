// @vitest-environment happy-dom
import type { UIMessage } from "ai";
import { act } from "react";
import { createRoot, type Root } from "react-dom/client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Assistant } from "./assistant.ts";
import { isPaiToolPart } from "./is-pai-tool-part.ts";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

function chunk(seq: number, stream: "stdout" | "stderr", text: string) {
  return {
    type: "data-output",
    data: { toolCallId: "c1", toolId: "codeInterpreter", toolName: "python", seq, value: { stream, text } },
  } as const;
}

/** A `python` call of the code interpreter tool (tool id `codeInterpreter`), running or with its stored output. */
function interpreterMessage(output?: unknown): UIMessage {
  return {
    id: "m1",
    role: "assistant",
    parts: [
      {
        type: "tool-python",
        toolCallId: "c1",
        toolMetadata: { paiToolId: "codeInterpreter" },
        input: { code: "print('a')\ndf", language: "python" },
        ...(output === undefined ? { state: "input-available" } : { state: "output-available", output }),
      } as UIMessage["parts"][number],
      chunk(1, "stdout", "a\n"),
      chunk(2, "stderr", "careful\n"),
    ],
  };
}

function Messages({ message }: { message: UIMessage }) {
  return (
    <div>
      {message.parts.map((part) =>
        isPaiToolPart(part) ? <Assistant.Tool key={part.toolCallId} message={message} part={part} /> : null,
      )}
    </div>
  );
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

describe("CodeInterpreterCard", () => {
  it("is the card of a codeInterpreter call: the code and the streamed output while it runs", () => {
    act(() => root.render(<Messages message={interpreterMessage()} />));
    const card = container.querySelector(".pai-code-interpreter")!;
    expect(card.getAttribute("data-status")).toBe("running");
    expect(card.querySelector(".pai-code-cell")!.textContent).toBe("print('a')\ndf");
    const streams = [...card.querySelectorAll(".pai-code-output span")].map((span) => [
      span.getAttribute("data-stream"),
      span.textContent,
    ]);
    expect(streams).toEqual([
      ["stdout", "a\n"],
      ["stderr", "careful\n"],
    ]);
  });

  it("shows an image, a sanitised table, text, and an exception with its traceback once done", () => {
    const output = {
      language: "python",
      contextId: "default-python",
      results: [
        { isMainResult: false, png: PNG, text: "<Figure size 640x480 with 1 Axes>" },
        {
          isMainResult: true,
          text: "   x\n0  1",
          html: '<table class="dataframe" onclick="steal()"><tr><td style="background:url(//evil)">1<script>steal()</script><img src=x onerror="steal()"><a href="javascript:steal()">link</a></td></tr></table>',
        },
        { isMainResult: false, text: "'plain'" },
      ],
      logs: { stdout: ["a\n"], stderr: [] },
      error: {
        name: "ValueError",
        value: "bad",
        traceback: "Traceback (most recent call last):\nValueError: bad",
      },
      executionCount: 3,
      terminationReason: "completed",
      durationMs: 120,
    };
    act(() => root.render(<Messages message={interpreterMessage(output)} />));
    const card = container.querySelector(".pai-code-interpreter")!;
    expect(card.getAttribute("data-status")).toBe("done");
    expect(card.querySelector('[data-kind="image"] img')!.getAttribute("src")).toBe(
      `data:image/png;base64,${PNG}`,
    );
    const table = card.querySelector('[data-kind="html"]')!;
    expect(table.querySelector("td")!.textContent).toBe("1link");
    expect(table.innerHTML).not.toMatch(/script|onclick|onerror|javascript:|style|<img|<a /);
    expect(table.querySelector("table")!.getAttribute("class")).toBe("dataframe");
    expect(card.querySelector('[data-kind="text"]')!.textContent).toBe("'plain'");
    expect(card.querySelector(".pai-code-error .pai-tool-error")!.textContent).toBe("ValueError: bad");
    expect(card.querySelector(".pai-code-traceback")!.textContent).toContain(
      "Traceback (most recent call last)",
    );
    expect(card.querySelector(".pai-code-footer")!.textContent).toBe("[3] · 0.12 s");
  });
});
