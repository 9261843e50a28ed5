// Real sandbox (the pai/sandbox image on the Docker engine): a server that listens, one that exits, one that never
// listens.
import { createTestSandbox, type TestSandbox } from "@pai/sandbox/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answers, waitForPort } from "./wait-for-port.ts";

describe("waitForPort in a real sandbox", () => {
  let box: TestSandbox;
  beforeAll(async () => {
    box = await createTestSandbox();
  }, 120_000);
  afterAll(async () => {
    await box?.stop();
  });

  it("resolves once the server's port accepts connections", async () => {
    expect(await answers({ sandbox: box, port: 8123 })).toBe(false);
    const server = await box.spawn({ command: "python3 -m http.server 8123" });
    try {
      expect(await waitForPort({ sandbox: box, port: 8123, server, timeoutMs: 30_000 })).toEqual({
        outcome: "listening",
      });
      expect(await answers({ sandbox: box, port: 8123 })).toBe(true);
    } finally {
      await server.kill();
    }
    expect(await answers({ sandbox: box, port: 8123 })).toBe(false);
  });

  it("reports the exit, with what the command printed, when it ends before listening", async () => {
    const server = await box.spawn({ command: "echo 'cannot bind' >&2; exit 3" });
    const wait = await waitForPort({ sandbox: box, port: 8124, server, timeoutMs: 30_000 });
    expect(wait.outcome).toBe("exited");
    if (wait.outcome !== "exited") return;
    expect(wait.result.exitCode).toBe(3);
    expect(wait.result.stderr).toBe("cannot bind\n");
  });

  it("gives up after the timeout when the command runs but never listens", async () => {
    const server = await box.spawn({ command: "sleep 60" });
    try {
      expect(
        await waitForPort({ sandbox: box, port: 8125, server, timeoutMs: 1_000, intervalMs: 100 }),
      ).toEqual({ outcome: "timeout" });
    } finally {
      await server.kill();
    }
  });

  it("stops probing with the signal's reason", async () => {
    const server = await box.spawn({ command: "sleep 60" });
    try {
      const controller = new AbortController();
      const waiting = waitForPort({
        sandbox: box,
        port: 8126,
        server,
        timeoutMs: 60_000,
        signal: controller.signal,
      });
      controller.abort(new Error("stopped by the user"));
      await expect(waiting).rejects.toThrow("stopped by the user");
    } finally {
      await server.kill();
    }
  });
});
