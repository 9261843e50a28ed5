import { describe, expect, it } from "vitest";
import { toolTitleOf } from "./tool-title-of.ts";

describe("toolTitleOf", () => {
  it("turns a registration key into words", () => {
    expect(toolTitleOf("runScript")).toBe("Run script");
    expect(toolTitleOf("commit_work")).toBe("Commit work");
    expect(toolTitleOf("fetchURL2")).toBe("Fetch url2");
    expect(toolTitleOf("deploy")).toBe("Deploy");
  });
});
