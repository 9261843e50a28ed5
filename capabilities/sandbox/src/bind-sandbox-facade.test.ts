import type { ExposePortOptions, PortPreview } from "@pai/core";
import { bindFacade } from "@pai/docker-binding";
import { describe, expect, it } from "vitest";
import { bindSandboxFacade } from "./bind-sandbox-facade.ts";
import { sandboxCalls } from "./sandbox-calls.ts";
import { SandboxError } from "./sandbox-error.ts";
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
    exposePort: (_port, options) => record(options),
    openTerminal: (options) => record(options),
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

  it("exposes ports through the run's previews, checking the port first; without previews says how to serve them", async () => {
    const seen: Array<AbortSignal | undefined> = [];
    const exposed: Array<{ port: number; options: ExposePortOptions | undefined }> = [];
    const previews = {
      async expose(port: number, options?: ExposePortOptions): Promise<PortPreview> {
        exposed.push({ port, options });
        return {
          id: "p1",
          url: "http://p1.localhost:3000/?token=t",
          port,
          access: "token",
          expiresAt: new Date(0).toISOString(),
          close: async () => {},
        };
      },
    };
    const run = new AbortController();
    const view = bindFacade(recordingFacade(seen), { calls: sandboxCalls, signal: run.signal, previews });
    const preview = await view.exposePort(8000, { access: "identity", ttlMs: 60_000 });
    expect(preview).toMatchObject({ port: 8000, url: "http://p1.localhost:3000/?token=t" });
    expect(exposed).toEqual([{ port: 8000, options: { access: "identity", ttlMs: 60_000 } }]);
    for (const port of [0, 70_000, 1.5]) {
      const error = await view.exposePort(port).catch((caught: unknown) => caught);
      expect(SandboxError.hasCode(error, "INVALID_ARGUMENT")).toBe(true);
    }
    expect(exposed).toHaveLength(1);
    run.abort(new Error("stopped"));
    await expect(view.exposePort(8000)).rejects.toThrow("stopped");

    const withoutPreviews = await bindSandboxFacade(recordingFacade(seen), new AbortController().signal)
      .exposePort(8000)
      .catch((caught: unknown) => caught);
    expect(SandboxError.hasCode(withoutPreviews, "PREVIEWS_UNAVAILABLE")).toBe(true);
    expect((withoutPreviews as Error).message).toMatch(/createPaiHandler/);
    expect(seen).toEqual([]); // the facade's own exposePort is never what a view calls
  });
});
