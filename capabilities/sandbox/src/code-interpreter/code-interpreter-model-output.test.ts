import { describe, expect, it } from "vitest";
import { codeInterpreterModelOutput } from "./code-interpreter-model-output.ts";
import { type CodeInterpreterOutput, codeInterpreterOutputSchema } from "./code-interpreter-output.ts";

// A 1×1 PNG and a tiny JPEG header (the projection does not decode images).
const png =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const jpeg = "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAEBAQ==";

function stored(overrides: Partial<CodeInterpreterOutput> = {}): CodeInterpreterOutput {
  return codeInterpreterOutputSchema.parse({
    language: "python",
    contextId: "default-python",
    results: [
      { isMainResult: false, text: "<Figure size 640x480 with 1 Axes>", png },
      { isMainResult: false, text: "<IPython.core.display.Image object>", jpeg },
      { isMainResult: true, text: "   a\n0  1", html: "<table><tr><td>1</td></tr></table>" },
    ],
    logs: { stdout: ["loaded 3 rows\n"], stderr: [] },
    executionCount: 7,
    terminationReason: "completed",
    durationMs: 12,
    ...overrides,
  });
}

describe("codeInterpreterModelOutput", () => {
  it("gives the model text and the PNG and JPEG results as image parts, in order", () => {
    const output = codeInterpreterModelOutput(stored());
    expect(output.type).toBe("content");
    const parts = (output as { value: Array<Record<string, unknown>> }).value;
    expect(parts.map((part) => part.type)).toEqual(["text", "file", "file"]);
    expect(parts[1]).toEqual({ type: "file", mediaType: "image/png", data: { type: "data", data: png } });
    expect(parts[2]).toEqual({ type: "file", mediaType: "image/jpeg", data: { type: "data", data: jpeg } });
    const text = String(parts[0]?.text);
    expect(text).toContain("stdout:\nloaded 3 rows");
    expect(text).toContain("Out[7]:    a\n0  1");
    expect(text).toContain("(image/png image 1, attached below)");
    expect(text).not.toContain("<table>");
  });

  it("names the images past the budget instead of attaching them", () => {
    const output = codeInterpreterModelOutput(stored(), { maxImageBytes: png.length });
    const parts = (output as { value: Array<Record<string, unknown>> }).value;
    expect(parts.filter((part) => part.type === "file")).toHaveLength(1);
    expect(String(parts[0]?.text)).toContain("(image/jpeg image not attached: over the size budget)");
    const none = codeInterpreterModelOutput(stored(), { maxImages: 0 });
    expect((none as { value: unknown[] }).value).toHaveLength(1);
  });

  it("tells the model of a restarted context, an error with its traceback, and an interrupt", () => {
    const output = codeInterpreterModelOutput(
      stored({
        results: [],
        logs: { stdout: [], stderr: [] },
        error: { name: "NameError", value: "name 'df' is not defined", traceback: "----> 1 df" },
        terminationReason: "timeout",
        restarted: true,
        restartReason: "the sandbox's processes stopped (it hibernated while idle, or was restarted)",
      }),
    );
    const text = String((output as { value: Array<{ text?: string }> }).value[0]?.text);
    expect(text).toMatch(/^\[the python context was started again .* gone: the sandbox's processes stopped/);
    expect(text).toContain("error: NameError: name 'df' is not defined\n----> 1 df");
    expect(text).toContain("[interrupted: the cell ran past its time limit");
  });
});
