import { describe, expect, it } from "vitest";
import { SandboxError } from "../sandbox-error.ts";
import { createOutputReader } from "./output-reader.ts";

describe("createOutputReader", () => {
  it("reads lines and exact byte counts across chunk boundaries, waiting for what has not arrived", async () => {
    const reader = createOutputReader("test");
    reader.push(Buffer.from("12"));
    const line = reader.readLine(100);
    reader.push(Buffer.from("3\nabc"));
    expect((await line).toString()).toBe("123");
    const bytes = reader.read(6);
    reader.push(Buffer.from("de"));
    reader.push(Buffer.from("fgh\n"));
    expect((await bytes).toString()).toBe("abcdef");
    expect((await reader.readLine(100)).toString()).toBe("gh");
  });

  it("fails a read past the end with the error it ended with, or SANDBOX_PROTOCOL", async () => {
    const reader = createOutputReader("test");
    reader.push(Buffer.from("ab"));
    const pending = reader.read(3);
    reader.end();
    await expect(pending).rejects.toSatisfy((error) => SandboxError.hasCode(error, "SANDBOX_PROTOCOL"));
    const failed = createOutputReader("test");
    failed.end(new Error("gone"));
    await expect(failed.readLine(10)).rejects.toThrow("gone");
  });

  it("refuses a line longer than its limit", async () => {
    const reader = createOutputReader("test");
    reader.push(Buffer.alloc(64, 0x61));
    await expect(reader.readLine(16)).rejects.toSatisfy((error) =>
      SandboxError.hasCode(error, "SANDBOX_PROTOCOL"),
    );
  });
});
