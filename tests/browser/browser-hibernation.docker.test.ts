// A browser hibernates like a sandbox: its container is stopped while idle and started again on use, and its
// Chromium profile (cookies, localStorage) is kept; one killed from outside is started again the same way on its
// next use. The page is served by this test on the host's 127.0.0.1.
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { dockerBrowser } from "@pai/browser";
import { createDockerDriver, poolLabels } from "@pai/pool";
import { execa } from "execa";
import { describe, expect, it } from "vitest";

const image = process.env.PAI_BROWSER_IMAGE ?? "pai/browser:latest";
const dockerOptedOut = process.env.PAI_DOCKER_TESTS === "0" && process.env.CI !== "true";
const driver = createDockerDriver();

async function poolContainers(poolId: string): Promise<string[]> {
  const rows = await driver.list({ labels: { [poolLabels.pool]: poolId } });
  return rows.map((row) => row.id).sort();
}

async function waitFor(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.skipIf(dockerOptedOut)("browser hibernation on the real engine", () => {
  it("keeps the profile (a cookie and localStorage) across hibernate and wake", async () => {
    const server = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/html" }).end("<title>store</title><p>here</p>");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const poolId = `test-browser-hibernate-${randomBytes(3).toString("hex")}`;
    const binding = dockerBrowser({
      image,
      poolId,
      pool: { min: 0, max: 2, hibernateAfterMs: 300 },
      network: { allow: [new URL(origin).host] },
    });
    const signal = new AbortController().signal;
    let resource: Awaited<ReturnType<typeof binding.provision>> | undefined;
    try {
      resource = await binding.provision({ leaseKey: "user:u1", lifetime: "user", signal });
      expect(await resource.hibernation?.wake(signal)).toBe("running");
      const page = resource.bind({ signal });
      await page.goto(`${origin}/`);
      await page.evaluate(
        `localStorage.setItem("kept", "yes"); document.cookie = "session=abc; max-age=3600; path=/"; true`,
      );
      resource.hibernation?.idle();
      await waitFor(() => binding.metrics()?.hibernated === 1, "hibernation");
      expect((await driver.inspect(resource.resourceId)).running).toBe(false);

      expect(await resource.hibernation?.wake(signal)).toBe("woken");
      const woken = resource.bind({ signal });
      await woken.goto(`${origin}/`);
      expect(await woken.evaluate(`localStorage.getItem("kept")`)).toBe("yes");
      expect(await woken.evaluate("document.cookie")).toContain("session=abc");

      // Killed from outside while in use: the next use starts it again, Chromium on the same profile.
      await execa("docker", ["kill", resource.resourceId]);
      await waitFor(async () => !(await driver.inspect(resource!.resourceId)).running, "the kill");
      expect(await resource.hibernation?.wake(signal)).toEqual({
        status: "restarted",
        reason: "its container was killed (exit code 137)",
      });
      const restarted = resource.bind({ signal });
      await restarted.goto(`${origin}/`);
      expect(await restarted.evaluate(`localStorage.getItem("kept")`)).toBe("yes");
      const chromium = await driver.exec(resource.resourceId, {
        cmd: ["sh", "-c", "ps -o user= -C chromium | sort -u"],
      });
      expect(chromium.stdout).toBe("sandbox\n");
    } finally {
      await resource?.release();
      await binding.close();
      server.close();
      try {
        expect(await poolContainers(poolId)).toEqual([]);
      } finally {
        for (const id of await poolContainers(poolId)) await driver.remove(id).catch(() => undefined);
      }
    }
  }, 120_000);

  it("gives a recorded browser's profile to its successor when another spec made it (an upgrade)", async () => {
    const server = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "text/html" }).end("<title>store</title><p>here</p>");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const network = { allow: [new URL(origin).host] };
    const suffix = randomBytes(3).toString("hex");
    // Another pool id is what an upgrade's new image or limits make of the default one.
    const poolIds = [`test-browser-upgrade-old-${suffix}`, `test-browser-upgrade-new-${suffix}`];
    const before = dockerBrowser({ image, poolId: poolIds[0], pool: { min: 0, max: 1 }, network });
    const after = dockerBrowser({ image, poolId: poolIds[1], pool: { min: 0, max: 1 }, network });
    const signal = new AbortController().signal;
    try {
      const resource = await before.provision({ leaseKey: "user:u1", lifetime: "user", signal });
      const page = resource.bind({ signal });
      await page.goto(`${origin}/`);
      await page.evaluate(
        `localStorage.setItem("kept", "yes"); document.cookie = "session=abc; max-age=3600; path=/"; true`,
      );
      await before.close(); // the old process goes; its leased browser stays for the next one

      const successor = await after.reattach(
        {
          capability: "browser",
          lifetime: "user",
          key: "u1",
          resourceId: resource.resourceId,
          meta: resource.meta,
          createdAt: Date.now(),
          lastUsedAt: Date.now(),
        },
        AbortSignal.timeout(120_000),
      );
      expect(successor?.resourceId).toBeDefined();
      expect(successor?.resourceId).not.toBe(resource.resourceId);
      expect(await poolContainers(poolIds[0]!)).toEqual([]);
      const next = successor!.bind({ signal });
      await next.goto(`${origin}/`);
      expect(await next.evaluate(`localStorage.getItem("kept")`)).toBe("yes");
      expect(await next.evaluate("document.cookie")).toContain("session=abc");
      await successor!.release();
      expect(await poolContainers(poolIds[1]!)).toEqual([]);
    } finally {
      await Promise.all([before.close(), after.close()]);
      server.close();
      for (const poolId of poolIds)
        for (const id of await poolContainers(poolId)) await driver.remove(id).catch(() => undefined);
    }
  }, 180_000);
});
