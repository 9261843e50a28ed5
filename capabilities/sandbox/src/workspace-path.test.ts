import { describe, expect, it } from "vitest";
import { SandboxError } from "./sandbox-error.ts";
import { resolveWorkingDirectory, resolveWorkspacePath } from "./workspace-path.ts";

const outside = (path: string) => {
  try {
    resolveWorkspacePath(path, "/workspace");
  } catch (error) {
    return SandboxError.hasCode(error, "PATH_OUTSIDE_WORKSPACE");
  }
  return false;
};

describe("resolveWorkspacePath", () => {
  it("resolves relative paths against the workspace", () => {
    expect(resolveWorkspacePath("a/b.txt", "/workspace")).toBe("/workspace/a/b.txt");
    expect(resolveWorkspacePath("./a//b/", "/workspace")).toBe("/workspace/a/b");
    expect(resolveWorkspacePath(".", "/workspace")).toBe("/workspace");
    expect(resolveWorkspacePath("", "/workspace")).toBe("/workspace");
    expect(resolveWorkspacePath("a/../b", "/workspace")).toBe("/workspace/b");
  });

  it("keeps absolute paths inside the workspace", () => {
    expect(resolveWorkspacePath("/workspace/x", "/workspace")).toBe("/workspace/x");
    expect(resolveWorkspacePath("/workspace/", "/workspace")).toBe("/workspace");
  });

  it("refuses paths that leave the workspace", () => {
    expect(outside("../etc/passwd")).toBe(true);
    expect(outside("a/../../x")).toBe(true);
    expect(outside("/etc/passwd")).toBe(true);
    expect(outside("/workspace-other/x")).toBe(true);
    expect(outside("/workspace/../etc")).toBe(true);
    expect(outside("/")).toBe(true);
  });

  it("rejects NUL bytes as an invalid argument", () => {
    expect(() => resolveWorkspacePath("a\0b", "/workspace")).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
  });
});

describe("resolveWorkingDirectory", () => {
  it("resolves relative directories against the workspace and keeps absolute ones", () => {
    expect(resolveWorkingDirectory("src", "/workspace")).toBe("/workspace/src");
    expect(resolveWorkingDirectory("/tmp", "/workspace")).toBe("/tmp");
  });
});
