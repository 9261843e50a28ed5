// dockerBrowser on an engine other than the main one, reached only through its API over TCP with mutual TLS
// (scripts/docker-engines-extra's engine-1 on 127.0.0.1): Chromium's DevTools pipe and the egress proxy travel over
// the in-container agent's connection through that API, so nothing else of the engine's host needs to be reachable.
// The first run copies the browser image into the extra engine.
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type DockerBrowserBinding, dockerBrowser, type ProvisionedBrowser } from "@pai/browser";
import { createDockerDriver, poolLabels } from "@pai/pool";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  containersOn,
  engineBrowserImage,
  engineSandboxImage,
  ensureTestEngines,
  removeFromEngines,
  type TestEngine,
} from "../fixtures/test-engines.ts";

const mainEngine = createDockerDriver();
let engine: TestEngine;
let service: { server: Server; port: number };
const poolId = `test-browser-engines-${randomBytes(3).toString("hex")}`;

beforeAll(async () => {
  const [one] = ensureTestEngines(1, { images: [engineSandboxImage(), engineBrowserImage()] });
  if (!one) throw new Error("no extra engine");
  engine = one;
  const server = createServer((_request, response) => {
    response.setHeader("content-type", "text/html");
    response.end("<title>host page</title><p id='where'>served on the host's loopback</p>");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  service = { server, port: (server.address() as AddressInfo).port };
}, 600_000);

afterAll(async () => {
  if (engine) await removeFromEngines([engine], poolId);
  await new Promise((resolve) => service?.server.close(resolve));
});

describe("dockerBrowser on another engine", () => {
  it("drives Chromium on an engine reached over TCP + TLS, its pages reaching the network through PAI's proxy", async () => {
    const binding: DockerBrowserBinding = dockerBrowser({
      image: engineBrowserImage(),
      engines: [engine.tlsEngine()],
      poolId,
      pool: { min: 0, max: 1, acquireTimeoutMs: 120_000 },
      network: { allow: [`127.0.0.1:${service.port}`] },
    });
    let browser: ProvisionedBrowser | undefined;
    try {
      browser = await binding.provision({
        leaseKey: "user:remote",
        lifetime: "user",
        signal: AbortSignal.timeout(180_000),
      });
      expect(browser.meta).toMatchObject({ engine: engine.id, poolId });
      // The container is on the extra engine, not on the main one, and has no network but its loopback.
      expect(await containersOn(engine, poolId)).toEqual([browser.resourceId]);
      expect(await mainEngine.list({ labels: { [poolLabels.pool]: poolId } })).toEqual([]);
      const inspected = await engine.driver.exec(browser.resourceId, {
        cmd: ["sh", "-c", "ls /sys/class/net"],
      });
      expect(inspected.stdout.trim()).toBe("lo");

      const page = await browser.facade.goto(`http://127.0.0.1:${service.port}/`);
      expect(page.status).toBe(200);
      expect(await browser.facade.text("#where")).toBe("served on the host's loopback");
      expect(await browser.facade.evaluate("document.title")).toBe("host page");
    } finally {
      await browser?.release();
      await binding.close();
    }
    expect(await containersOn(engine, poolId)).toEqual([]);
  }, 300_000);
});
