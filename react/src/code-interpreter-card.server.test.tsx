import type { UIMessage } from "ai";
import { renderToString } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { Assistant } from "./assistant.ts";

/** A finished `python` call of the code interpreter tool whose main result has HTML and text. */
const message: UIMessage = {
  id: "m1",
  role: "assistant",
  parts: [
    {
      type: "tool-python",
      toolCallId: "c1",
      toolMetadata: { paiToolId: "codeInterpreter" },
      state: "output-available",
      input: { code: "df" },
      output: {
        results: [{ isMainResult: true, text: "   x\n0  1", html: "<table><script>x()</script></table>" }],
        logs: { stdout: [], stderr: [] },
        executionCount: 1,
        terminationReason: "completed",
        durationMs: 5,
      },
    } as UIMessage["parts"][number],
  ],
};

describe("CodeInterpreterCard on the server", () => {
  it("renders a table's text, since nothing there can sanitise its HTML", () => {
    const part = message.parts[0] as Parameters<typeof Assistant.Tool>[0]["part"];
    const html = renderToString(<Assistant.Tool message={message} part={part} />);
    expect(html).toContain('data-kind="text"');
    expect(html).toContain("   x\n0  1");
    expect(html).not.toContain("<table");
  });
});
