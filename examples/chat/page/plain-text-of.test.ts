import { describe, expect, it } from "vitest";
import { plainTextOf } from "./plain-text-of.ts";

describe("plainTextOf", () => {
  it("keeps the words of a model's markdown and drops its syntax", () => {
    const markdown = [
      "## Result",
      "",
      "Ran **fib.py** with `python3`, *quickly*:",
      "",
      "- [docs](https://example.com/docs)",
      "> quoted",
      "",
      "```sh",
      "$ git log --oneline",
      "```",
    ].join("\n");
    expect(plainTextOf(markdown)).toBe(
      [
        "Result",
        "",
        "Ran fib.py with python3, quickly:",
        "",
        "• docs",
        "quoted",
        "",
        "$ git log --oneline",
      ].join("\n"),
    );
  });

  it("drops the marks of half-streamed emphasis and leaves snake_case alone", () => {
    expect(plainTextOf("Committed **fib.py")).toBe("Committed fib.py");
    expect(plainTextOf("run_script and a*b")).toBe("run_script and a*b");
  });
});
