import { describe, expect, it } from "vitest";
import { whatGitSaid } from "./commit-work.ts";

describe("whatGitSaid", () => {
  it("carries git's own words: stderr, then stdout where `commit -q` reports nothing to commit", () => {
    expect(
      whatGitSaid({
        stdout: "On branch master\nnothing to commit, working tree clean\n",
        stderr: "",
        terminationReason: "exit",
      }),
    ).toBe("On branch master\nnothing to commit, working tree clean");
    expect(
      whatGitSaid({
        stdout: "",
        stderr: "fatal: pathspec 'x.py' did not match any files\n",
        terminationReason: "exit",
      }),
    ).toBe("fatal: pathspec 'x.py' did not match any files");
  });

  it("says how the command ended when git printed nothing, and keeps only the tail of a long message", () => {
    expect(whatGitSaid({ stdout: "", stderr: "", terminationReason: "timeout" })).toBe("no output (timeout)");
    const long = whatGitSaid({ stdout: "", stderr: "x".repeat(5000), terminationReason: "exit" });
    expect(long).toBe(`…${"x".repeat(1000)}`);
  });
});
