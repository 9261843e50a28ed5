import { describe, expect, it } from "vitest";
import { bindSandboxFacade } from "./bind-sandbox-facade.ts";
import type { SandboxFacade } from "./sandbox-facade.ts";

/** A facade that records the signal each call received. */
function recordingFacade(seen: Array<AbortSignal | undefined>): SandboxFacade {
  const record = async (options?: { signal?: AbortSignal }) => {
    seen.push(options?.signal);
    return null as never;
  };
  return {
    runCommand: (options) => record(options),
    spawn: (options) => record(options),
    writeFiles: (_files, options) => record(options),
    readFile: (_path, options) => record(options),
    readTextFile: (_path, options) => record(options),
    listFiles: (_directory, options) => record(options),
    stat: (_path, options) => record(options),
    removeFile: (_path, options) => record(options),
    uploadDirectory: (_source, _target, options) => record(options),
    downloadDirectory: (_directory, options) => record(options),
    info: () => record(),
    createCodeContext: (options) => record(options),
    listCodeContexts: (options) => record(options),
    restartCodeContext: (_context, options) => record(options),
    removeCodeContext: (_context, options) => record(options),
    runCode: (_code, options) => record(options),
  };
}

describe("bindSandboxFacade", () => {
  it("aborts every operation with the bound signal, alongside the caller's own", async () => {
    const seen: Array<AbortSignal | undefined> = [];
    const run = new AbortController();
    const bound = bindSandboxFacade(recordingFacade(seen), run.signal);
    const own = new AbortController();
    await bound.runCommand({ command: "true" });
    await bound.runCommand({ command: "true", signal: own.signal });
    await bound.readFile("a");
    await bound.writeFiles([], {});
    await bound.uploadDirectory("/tmp/x");
    await bound.runCode("1 + 1");
    await bound.restartCodeContext("ctx");
    expect(seen).toHaveLength(7);
    expect(seen.every((signal) => signal !== undefined && !signal.aborted)).toBe(true);
    own.abort();
    expect(seen.map((signal) => signal?.aborted)).toEqual([false, true, false, false, false, false, false]);
    run.abort();
    expect(seen.every((signal) => signal?.aborted)).toBe(true);
  });
});
