import { describe, expect, it } from "vitest";
import type { CommandResult, SandboxFacade } from "./sandbox-facade.ts";
import { toSandboxSession } from "./to-sandbox-session.ts";

/** An in-memory facade: just enough of the file methods and `runCommand` for the adapter. */
function memoryFacade(files: Map<string, Uint8Array>): SandboxFacade {
  const key = (path: string) => (path.startsWith("/") ? path : `/workspace/${path}`);
  const unsupported = async (): Promise<never> => {
    throw new Error("not in the fake");
  };
  return {
    runCommand: async (options): Promise<CommandResult> => ({
      exitCode: options.command === "false" ? 1 : 0,
      stdout: `ran ${options.command} in ${options.cwd ?? "/workspace"}`,
      stderr: "",
      durationMs: 1,
      terminationReason: "exit",
      truncated: { stdout: false, stderr: false },
      omittedBytes: { stdout: 0, stderr: 0 },
    }),
    spawn: unsupported,
    writeFiles: async (entries) => {
      for (const entry of entries) {
        files.set(
          key(entry.path),
          typeof entry.content === "string" ? new TextEncoder().encode(entry.content) : entry.content,
        );
      }
    },
    readFile: async (path) => files.get(key(path)) ?? null,
    readTextFile: async (path) => {
      const bytes = files.get(key(path));
      return bytes ? new TextDecoder().decode(bytes) : null;
    },
    listFiles: async (directory) =>
      [...files.keys()]
        .filter((path) => path.startsWith(`${key(directory)}/`))
        .map((path) => ({ path, name: path.split("/").at(-1) ?? "", type: "file" as const, size: 1 })),
    stat: async (path) => {
      const bytes = files.get(key(path));
      return bytes ? { path: key(path), type: "file", size: bytes.length, mode: 0o644, mtimeMs: 0 } : null;
    },
    removeFile: async (path) => files.delete(key(path)),
    uploadDirectory: unsupported,
    downloadDirectory: unsupported,
    exposePort: unsupported,
    openTerminal: unsupported,
    info: unsupported,
    createCodeContext: unsupported,
    listCodeContexts: unsupported,
    restartCodeContext: unsupported,
    removeCodeContext: unsupported,
    runCode: unsupported,
  };
}

describe("toSandboxSession", () => {
  it("reads line ranges of text files (1-based, inclusive, through EOF)", async () => {
    const files = new Map<string, Uint8Array>();
    const session = toSandboxSession(memoryFacade(files));
    await session.writeTextFile({ path: "notes.txt", content: "one\ntwo\nthree\nfour" });
    expect(await session.readTextFile({ path: "notes.txt", startLine: 2, endLine: 3 })).toBe("two\nthree\n");
    expect(await session.readTextFile({ path: "notes.txt", startLine: 3, endLine: 99 })).toBe("three\nfour");
    expect(await session.readTextFile({ path: "notes.txt" })).toBe("one\ntwo\nthree\nfour");
    expect(await session.readTextFile({ path: "missing.txt" })).toBeNull();
  });

  it("streams files in and out, stats, lists and deletes them", async () => {
    const files = new Map<string, Uint8Array>();
    const session = toSandboxSession(memoryFacade(files), { description: "test box" });
    expect(session.description).toBe("test box");
    await session.writeFile({
      path: "dir/bin",
      content: new ReadableStream({
        start(controller) {
          controller.enqueue(new Uint8Array([1, 2]));
          controller.enqueue(new Uint8Array([3]));
          controller.close();
        },
      }),
    });
    const stream = await session.readFile({ path: "dir/bin" });
    const chunks: number[] = [];
    for await (const chunk of stream ?? []) chunks.push(...chunk);
    expect(chunks).toEqual([1, 2, 3]);
    expect(await session.stat({ path: "dir/bin" })).toEqual({ type: "file", size: 3 });
    expect(await session.listDirectory({ path: "dir" })).toEqual([{ name: "bin", type: "file" }]);
    expect(await session.deleteFile({ path: "dir/bin" })).toBe(true);
    expect(await session.readBinaryFile({ path: "dir/bin" })).toBeNull();
  });

  it("runs commands with the SDK's option names", async () => {
    const session = toSandboxSession(memoryFacade(new Map()));
    expect(await session.run({ command: "ls", workingDirectory: "src" })).toEqual({
      exitCode: 0,
      stdout: "ran ls in src",
      stderr: "",
    });
  });
});
