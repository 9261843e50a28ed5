// The run's sandbox pool process and the worker side of the fixture, in one process: what a worker may and may
// not do over the socket, what happens when a worker or the agent goes away, and how acquires fail.
import { mkdtemp, rm } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PoolError, poolLabels } from "@pai/pool";
import { SandboxError } from "@pai/sandbox";
import { test as base, describe, expect } from "vitest";
import { acquirePooledSandbox } from "../../capabilities/sandbox/src/vitest/acquire-pooled-sandbox.ts";
import {
  createSandboxPoolServer,
  type SandboxPoolServer,
} from "../../capabilities/sandbox/src/vitest/sandbox-pool-server.ts";
import { sandboxImage, testDriver, waitFor } from "../sandbox/docker-helpers.ts";

const test = base.extend<{ stateDirectory: string; server: SandboxPoolServer }>({
  // biome-ignore lint/correctness/noEmptyPattern: Vitest reads a fixture's dependencies from this pattern.
  stateDirectory: async ({}, use) => {
    const directory = await mkdtemp(join(tmpdir(), "pai-pool-server-"));
    try {
      await use(directory);
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  },
  server: async ({ stateDirectory }, use) => {
    const server = await createSandboxPoolServer({ driver: testDriver, stateDirectory, onWarning: () => {} });
    try {
      await use(server);
    } finally {
      await server.close();
    }
  },
});

/** Containers of the server's run on the engine. */
async function runContainers(server: SandboxPoolServer): Promise<string[]> {
  const rows = await testDriver.list({ labels: { [poolLabels.managed]: "true" } });
  return rows
    .filter((row) => row.labels[poolLabels.pool]?.startsWith(`${server.ownerId}/`))
    .map((row) => row.id);
}

async function exists(containerId: string): Promise<boolean> {
  return testDriver.inspect(containerId).then(
    () => true,
    (error: { code?: string }) => {
      if (error.code === "NOT_FOUND") return false;
      throw error;
    },
  );
}

/** A raw connection to the pool that sends `line` and collects what comes back until it closes. */
async function rawExchange(
  server: SandboxPoolServer,
  line: string,
): Promise<{ socket: Socket; received: string[] }> {
  const socket = connect(server.address.path);
  await new Promise((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  const received: string[] = [];
  socket.on("data", (chunk: Buffer) => received.push(chunk.toString()));
  socket.write(`${line}\n`);
  return { socket, received };
}

const options = { image: sandboxImage, pool: { min: 0, max: 1, acquireTimeoutMs: 60_000 } };

describe("the run's sandbox pool", () => {
  test("refuses a connection that does not carry the run's secret, and leases nothing", async ({
    server,
  }) => {
    const { socket, received } = await rawExchange(
      server,
      JSON.stringify({ type: "acquire", secret: "0".repeat(64), options }),
    );
    await new Promise((resolve) => socket.once("close", resolve));
    expect(received).toEqual([]);
    expect(await runContainers(server)).toEqual([]);
  });

  test("removes a sandbox when the worker holding it goes away without releasing it", async ({ server }) => {
    const { socket, received } = await rawExchange(
      server,
      JSON.stringify({ type: "acquire", secret: server.address.secret, options }),
    );
    await waitFor(() => received.join("").includes("\n"), "the acquired reply", 120_000);
    const reply = JSON.parse(received.join(""));
    expect(reply).toMatchObject({ type: "acquired", image: sandboxImage });
    expect(await exists(reply.containerId)).toBe(true);

    socket.destroy();

    await waitFor(async () => !(await exists(reply.containerId)), "the sandbox's removal", 30_000);
  });

  test("keeps serving commands when a program in the sandbox kills the relayed agent", async ({ server }) => {
    const sandbox = await acquirePooledSandbox({ address: server.address, options, driver: testDriver });
    try {
      const { facade } = sandbox;
      expect((await facade.info()).executor).toBe("agent");
      const killer = await facade.spawn({
        command:
          'for p in /proc/[0-9]*; do [ "$(cat "$p/comm" 2>/dev/null)" = pai-agent ] && kill -9 "$(basename "$p")"; done',
      });
      await killer.wait().catch(() => undefined);

      const after = await facade.runCommand({ command: "echo still here" });
      expect(after).toMatchObject({ exitCode: 0, stdout: "still here\n" });
      // The worker starts a fresh agent of its own (the relayed one is gone) and commands return to it.
      await waitFor(async () => (await facade.info()).executor === "agent", "a fresh agent", 30_000);
      expect((await facade.runCommand({ command: "echo on the agent" })).stdout).toBe("on the agent\n");
    } finally {
      await sandbox.release();
    }
    expect(await exists(sandbox.containerId)).toBe(false);
  });

  test("fails an acquire with POOL_EXHAUSTED when every sandbox is handed out past the deadline", async ({
    server,
  }) => {
    const tight = { ...options, pool: { min: 1, max: 1, acquireTimeoutMs: 10_000 } };
    await server.pool(tight).warm();
    const held = await acquirePooledSandbox({ address: server.address, options: tight, driver: testDriver });
    try {
      const error = await acquirePooledSandbox({
        address: server.address,
        options: tight,
        driver: testDriver,
      }).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(PoolError.hasCode(error, "POOL_EXHAUSTED")).toBe(true);
      expect((error as PoolError).details).toMatchObject({
        leased: 1,
        preparing: 0,
        max: 1,
        acquireTimeoutMs: 10_000,
      });
    } finally {
      await held.release();
    }
    expect(await exists(held.containerId)).toBe(false);
  });

  test("leaves no container behind when a waiting acquire is aborted", async ({ server }) => {
    const held = await acquirePooledSandbox({ address: server.address, options, driver: testDriver });
    const controller = new AbortController();
    const waiting = acquirePooledSandbox({
      address: server.address,
      options,
      driver: testDriver,
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(new Error("the test gave up")), 300);
    await expect(waiting).rejects.toThrow("the test gave up");
    await held.release();
    await waitFor(async () => (await runContainers(server)).length === 0, "no container of the run", 30_000);
  });

  test("reports options the binding refuses as INVALID_ARGUMENT in the test", async ({ server }) => {
    const error = await acquirePooledSandbox({
      address: server.address,
      options: { ...options, network: "bridge" as "none" },
      driver: testDriver,
    }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(SandboxError.hasCode(error, "INVALID_ARGUMENT")).toBe(true);
    expect((error as SandboxError).message).toContain('network is "none", "unsafe-host" or { allow: [...] }');
  });

  test("removes every sandbox of the run on close, handed out or ready", async ({ stateDirectory }) => {
    const server = await createSandboxPoolServer({ driver: testDriver, stateDirectory, onWarning: () => {} });
    const warm = { ...options, pool: { min: 1, max: 3, acquireTimeoutMs: 60_000 } };
    const held = await acquirePooledSandbox({
      address: server.address,
      options: warm,
      driver: testDriver,
    }).catch(async (error: unknown) => {
      await server.close();
      throw error;
    });
    try {
      await server.pool(warm).warm();
      expect((await runContainers(server)).length).toBe(2);
    } finally {
      await server.close();
    }
    expect(await runContainers(server)).toEqual([]);
    const release = await held.release().then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(SandboxError.hasCode(release, "CAPABILITY_UNAVAILABLE")).toBe(true);
  });
});
