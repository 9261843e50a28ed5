// What a page in a PAI browser can reach, on the real engine: under the defaults neither a service on the host's
// loopback nor another browser's DevTools endpoint there (a host Chromium started by this test with a DevTools
// port, as a user's own browser would be); with an allow entry naming that exact host:port the service is
// readable, and nothing else on the loopback is. Every connection is an event on the binding and on the run.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type BrowserConnectionEvent,
  BrowserError,
  browser,
  type DockerBrowserBinding,
  type DockerBrowserOptions,
  dockerBrowser,
} from "@pai/browser";
import {
  type CapabilityStatusEvent,
  createAgentRuntime,
  createMemoryThreadStore,
  createPai,
  defineAgent,
  defineTool,
} from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { createDockerDriver, poolLabels } from "@pai/pool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";

const image = process.env.PAI_BROWSER_IMAGE ?? "pai/browser:latest";
const dockerOptedOut = process.env.PAI_DOCKER_TESTS === "0" && process.env.CI !== "true";
const driver = createDockerDriver();
const secret = `admin-secret-${randomBytes(6).toString("hex")}`;

/** A host service on 127.0.0.1 with something a page must not read. */
function startService(): Promise<{ server: Server; address: string }> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "text/html" }).end(`<title>Admin</title><p>${secret}</p>`);
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ server, address: `127.0.0.1:${(server.address() as AddressInfo).port}` }),
    ),
  );
}

/** Another browser on the host, its DevTools endpoint on the host's loopback (as a user's own browser has). */
async function startHostChromium(): Promise<{ child: ChildProcess; address: string; profile: string }> {
  const profile = await mkdtemp(join(tmpdir(), "pai-other-browser-"));
  const child = spawn(
    "/usr/bin/chromium",
    [
      "--headless=new",
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--disable-background-networking",
      `--user-data-dir=${profile}`,
      "--remote-debugging-address=127.0.0.1",
      "--remote-debugging-port=0",
      "about:blank",
    ],
    // Its own process group, so the test ends Chromium's helper processes with it.
    { stdio: "ignore", detached: true },
  );
  const deadline = Date.now() + 30_000;
  for (;;) {
    const text = await readFile(join(profile, "DevToolsActivePort"), "utf8").catch(() => "");
    const port = Number(text.split("\n")[0]);
    if (port > 0) return { child, address: `127.0.0.1:${port}`, profile };
    if (Date.now() > deadline || child.exitCode !== null) throw new Error("the host Chromium did not start");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe.skipIf(dockerOptedOut)("what a browser's pages can reach", () => {
  let service: { server: Server; address: string };
  let other: { child: ChildProcess; address: string; profile: string };
  const bindings: Array<{ binding: DockerBrowserBinding; poolId: string }> = [];

  function binding(options: Partial<DockerBrowserOptions> = {}): DockerBrowserBinding {
    const poolId = `test-browser-isolation-${randomBytes(3).toString("hex")}`;
    const created = dockerBrowser({ image, poolId, pool: { min: 0, max: 2 }, ...options });
    bindings.push({ binding: created, poolId });
    return created;
  }

  beforeAll(async () => {
    service = await startService();
    other = await startHostChromium();
    // The other browser's endpoint really is open to anyone on the host's loopback.
    const targets = await fetch(`http://${other.address}/json/list`);
    expect(targets.status).toBe(200);
  });

  afterAll(async () => {
    try {
      for (const { binding: created } of bindings) await created.close();
    } finally {
      for (const { poolId } of bindings) {
        for (const row of await driver.list({ labels: { [poolLabels.pool]: poolId } })) {
          await driver.remove(row.id).catch(() => undefined);
        }
      }
      if (other?.child.pid !== undefined) {
        const exited = new Promise((resolve) => other.child.once("exit", resolve));
        if (other.child.exitCode === null && other.child.signalCode === null) {
          process.kill(-other.child.pid, "SIGKILL");
          await exited;
        }
        // A helper process may still be flushing into the profile for a moment.
        await rm(other.profile, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
      }
      await new Promise((resolve) => service?.server.close(resolve));
    }
  });

  it("under the defaults reads neither a loopback service nor another browser's DevTools", async () => {
    const events: BrowserConnectionEvent[] = [];
    const defaults = binding({ onConnection: (event) => events.push(event) });
    const resource = await defaults.provision({
      leaseKey: "user:defaults",
      lifetime: "user",
      signal: new AbortController().signal,
    });
    try {
      const page = resource.facade;
      for (const address of [service.address, other.address]) {
        const target = address === service.address ? `http://${address}/` : `http://${address}/json/list`;
        const failure = await page.goto(target).then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(BrowserError.isInstance(failure)).toBe(true);
        expect(failure).toMatchObject({
          code: "BROWSER_NAVIGATION_FAILED",
          details: { reason: "EGRESS_REFUSED" },
          message: expect.stringContaining(`pai egress: ${address} refused: a loopback address`),
        });
      }
      // Nor from inside a page: fetch, and an HTTPS tunnel (CONNECT), are refused too.
      const fetched = await page.evaluate(
        `fetch("http://${service.address}/").then((r) => r.text()).catch((e) => "failed: " + e.message)`,
      );
      expect(String(fetched)).not.toContain(secret);
      const tunnel = await page.goto(`https://${service.address}/`).catch((error: unknown) => error);
      expect(tunnel).toMatchObject({
        code: "BROWSER_NAVIGATION_FAILED",
        message: expect.stringContaining(`pai egress: ${service.address} refused`),
      });
      expect(await page.text()).not.toContain(secret);

      const refused = events.filter((event) => event.decision === "refused");
      expect(refused.map((event) => event.target)).toEqual(
        expect.arrayContaining([service.address, other.address]),
      );
      expect(events.filter((event) => event.decision === "allowed")).toEqual([]);
      expect(refused.every((event) => event.containerId === resource.resourceId)).toBe(true);
    } finally {
      await resource.release();
    }
  });

  it("reads the service once an allow entry names that exact host:port, and nothing else on the loopback", async () => {
    const allowed = binding({ network: { allow: ["*:*", service.address] } });
    const resource = await allowed.provision({
      leaseKey: "user:allowed",
      lifetime: "user",
      signal: new AbortController().signal,
    });
    try {
      const page = resource.facade;
      expect(await page.goto(`http://${service.address}/`)).toMatchObject({ title: "Admin", status: 200 });
      expect(await page.text()).toContain(secret);
      await expect(page.goto(`http://${other.address}/json/list`)).rejects.toMatchObject({
        details: { reason: "EGRESS_REFUSED" },
      });
      await expect(page.goto(`http://localhost:${service.address.split(":")[1]}/`)).rejects.toMatchObject({
        details: { reason: "EGRESS_REFUSED" },
      });
    } finally {
      await resource.release();
    }
  });

  it("reports the connections a tool's navigation made as capability status events on its run", async () => {
    const open = defineTool({
      id: "open",
      description: "Open a page.",
      inputSchema: z.object({ url: z.string() }),
      capabilities: { browser },
      execute: async (ctx) => {
        const result = await ctx.capabilities.browser
          .goto(ctx.input.url, { signal: ctx.signal })
          .catch((error: unknown) => ({ failed: (error as Error).message }));
        return result;
      },
    });
    const pai = createPai({ agents: { surfer: defineAgent({ tools: { open } }) } });
    const shared = binding({ network: { allow: [service.address] } });
    await using runtime = createAgentRuntime({
      pai,
      store: createMemoryThreadStore(),
      model: createScriptedModel({
        steps: [
          { toolCalls: [{ toolName: "open", input: { url: `http://${service.address}/` } }] },
          { toolCalls: [{ toolName: "open", input: { url: `http://${other.address}/json/list` } }] },
          { text: "done" },
        ],
      }),
      capabilities: { browser: shared },
    });
    const run = await runtime.run({ agentId: "surfer", identity: { userId: "eve" }, message: "go" });
    const statuses: CapabilityStatusEvent[] = [];
    for await (const chunk of run.stream as AsyncIterable<{ type: string; data?: unknown }>) {
      if (chunk.type === "data-pai-capability") statuses.push(chunk.data as CapabilityStatusEvent);
    }
    expect((await run.done).status).toBe("completed");
    const connections = statuses.filter((status) => status.status === "connection");
    expect(connections.map((status) => [status.connection?.target, status.connection?.decision])).toEqual(
      expect.arrayContaining([
        [service.address, "allowed"],
        [other.address, "refused"],
      ]),
    );
    const page = connections.find((status) => status.connection?.target === service.address);
    expect(page?.connection?.bytesDown).toBeGreaterThan(secret.length);
    expect(page?.capability).toBe("browser");
  });
});
