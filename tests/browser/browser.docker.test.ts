// The browser capability end to end: createAgentRuntime + the scripted model + dockerBrowser on the real engine and
// the real `pai/browser` image (Chromium in a container on network `none`, driven by playwright-core over the
// DevTools pipe the in-container agent relays). Pages are served by this test on the host's 127.0.0.1, reached
// through the egress proxy because the binding allows exactly that `host:port`.

import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import {
  BrowserError,
  type BrowserFacade,
  browser,
  type DockerBrowserBinding,
  dockerBrowser,
  type ImageProgress,
  resolveDefaultBrowserImage,
} from "@pai/browser";
import type { CapabilityBinding } from "@pai/core";
import {
  createAgentRuntime,
  createMemoryThreadStore,
  createPai,
  defineAgent,
  defineTool,
  PaiError,
} from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { createDockerDriver, poolLabels } from "@pai/pool";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";

const image = process.env.PAI_BROWSER_IMAGE ?? "pai/browser:latest";
const dockerOptedOut = process.env.PAI_DOCKER_TESTS === "0" && process.env.CI !== "true";
const driver = createDockerDriver();
const resultsDirectory = join(import.meta.dirname, "../../test-results/browser");
const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

function uniquePoolId(name: string): string {
  return `test-browser-${name}-${randomBytes(3).toString("hex")}`;
}

async function poolContainers(poolId: string): Promise<string[]> {
  const rows = await driver.list({ labels: { [poolLabels.pool]: poolId } });
  return rows.map((row) => row.id).sort();
}

async function removePoolContainers(poolId: string): Promise<void> {
  for (const id of await poolContainers(poolId)) await driver.remove(id).catch(() => undefined);
}

async function waitFor(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function running(containerId: string): Promise<boolean> {
  return driver.inspect(containerId).then(
    (info) => info.running,
    () => false,
  );
}

const formPage = `<!doctype html>
<html><head><title>Greeter</title></head>
<body>
  <h1>Greeter</h1>
  <form id="form" onsubmit="event.preventDefault(); sayHello();">
    <label>Name <input id="name" name="name"></label>
    <button id="greet" type="button" onclick="sayHello()">Greet</button>
  </form>
  <p id="result"></p>
  <a href="/about">About us</a> <a href="https://example.invalid/x">Elsewhere</a>
  <script>
    function sayHello() {
      document.getElementById("result").textContent = "Hello, " + document.getElementById("name").value + "!";
    }
  </script>
</body></html>`;

/** The test's web server, on 127.0.0.1 only. */
function startServer(): Promise<{ server: Server; origin: string }> {
  const server = createServer((request, response) => {
    if (request.url?.startsWith("/slow")) {
      const timer = setTimeout(() => response.end("<title>slow</title>late"), 10_000);
      request.on("close", () => clearTimeout(timer));
      return;
    }
    if (request.url === "/missing") {
      response.writeHead(404, { "content-type": "text/html" }).end("<title>nope</title>not here");
      return;
    }
    if (request.url === "/about") {
      response.writeHead(200, { "content-type": "text/html" }).end("<title>About</title><p>We greet.</p>");
      return;
    }
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(formPage);
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({ server, origin: `http://127.0.0.1:${port}` });
    });
  });
}

/** Screenshots the `browse` tool took, by tool call id. */
const screenshots = new Map<string, Uint8Array>();

const browse = defineTool({
  id: "browse",
  description: "Open the greeter page, greet someone and read the greeting.",
  inputSchema: z.object({ url: z.string(), name: z.string() }),
  capabilities: { browser },
  execute: async (ctx) => {
    const page = ctx.capabilities.browser;
    const opened = await page.goto(ctx.input.url, { signal: ctx.signal });
    await page.fill("#name", ctx.input.name, { signal: ctx.signal });
    await page.click("#greet", { signal: ctx.signal });
    const greeting = await page.text("#result", { signal: ctx.signal });
    screenshots.set(ctx.thread.toolCallId, await page.screenshot({ signal: ctx.signal }));
    const { containerId } = await page.info({ signal: ctx.signal });
    return { ...opened, greeting, containerId };
  },
});

const whereAmI = defineTool({
  id: "whereAmI",
  description: "The browser's current page.",
  inputSchema: z.object({}),
  capabilities: { browser },
  execute: async (ctx) => ctx.capabilities.browser.info({ signal: ctx.signal }),
});

const note = defineTool({
  id: "note",
  description: "Remember a note",
  inputSchema: z.object({ text: z.string() }),
  execute: (ctx) => ({ saved: ctx.input.text }),
});

const pai = createPai({ agents: { surfer: defineAgent({ tools: { browse, whereAmI, note } }) } });

/** The outputs of a run's calls of `toolName`, in call order. */
function outputsOf(
  messages: Array<{ parts: Array<Record<string, unknown>> }>,
  toolName: string,
): Array<Record<string, unknown>> {
  return messages
    .flatMap((message) => message.parts)
    .filter((part) => part.type === `tool-${toolName}` && part.state === "output-available")
    .map((part) => part.output as Record<string, unknown>);
}

/** The binding as a runtime sees it, without handing it the pool's lifetime (closing the runtime keeps it). */
function shared(
  binding: DockerBrowserBinding,
  onProvision: () => void = () => {},
): CapabilityBinding<BrowserFacade> {
  return {
    kind: binding.kind,
    capability: binding.capability,
    lifetime: binding.lifetime,
    idleTtlMs: binding.idleTtlMs,
    start: () => binding.start?.() ?? Promise.resolve(),
    provision: async (request) => {
      onProvision();
      return binding.provision(request);
    },
    reattach: (lease, signal) => binding.reattach(lease, signal),
    reapUnowned: (context) => binding.reapUnowned?.(context) ?? Promise.resolve(),
    close: async () => {},
  };
}

describe.skipIf(dockerOptedOut)("the browser capability on the real engine", () => {
  const poolId = uniquePoolId("e2e");
  let origin = "";
  let server: Server | undefined;
  let binding: DockerBrowserBinding;

  beforeAll(async () => {
    ({ server, origin } = await startServer());
    binding = dockerBrowser({
      image,
      poolId,
      pool: { min: 1, max: 6, acquireTimeoutMs: 30_000 },
      network: { allow: [new URL(origin).host] },
    });
    await binding.start?.();
  });

  afterAll(async () => {
    try {
      await binding?.close();
      expect(await poolContainers(poolId)).toEqual([]);
    } finally {
      await removePoolContainers(poolId);
      await new Promise((resolve) => server?.close(resolve));
    }
  });

  it("fills a form and clicks through a tool call, and the model's next prompt holds the page's text", async () => {
    const model = createScriptedModel({
      steps: [
        { toolCalls: [{ toolName: "browse", input: { url: `${origin}/`, name: "Ada" }, toolCallId: "b1" }] },
        { text: "greeted" },
      ],
    });
    await using runtime = createAgentRuntime({
      pai,
      store: createMemoryThreadStore(),
      model,
      capabilities: { browser: shared(binding) },
    });
    const result = await (
      await runtime.run({ agentId: "surfer", identity: { userId: "ada" }, message: "go" })
    ).done;
    expect(result.status).toBe("completed");
    const [output] = outputsOf(result.messages, "browse");
    expect(output).toMatchObject({
      url: `${origin}/`,
      title: "Greeter",
      status: 200,
      greeting: "Hello, Ada!",
    });
    expect(JSON.stringify(model.doStreamCalls[1]?.prompt)).toContain("Hello, Ada!");
    model.assertComplete();

    const png = screenshots.get("b1");
    expect(png).toBeInstanceOf(Uint8Array);
    expect([...png!.subarray(0, 8)]).toEqual(PNG_SIGNATURE);
    expect(png!.byteLength).toBeGreaterThan(1_000);
    await mkdir(resultsDirectory, { recursive: true });
    await writeFile(join(resultsDirectory, "greeter.png"), png!);
  });

  it("gives two runs of one user one browser (its page kept) and another user a second browser", async () => {
    const model = createScriptedModel({
      steps: [
        { toolCalls: [{ toolName: "browse", input: { url: `${origin}/?run=1`, name: "Bo" } }] },
        { text: "one" },
        { toolCalls: [{ toolName: "whereAmI", input: {} }] },
        { text: "two" },
        { toolCalls: [{ toolName: "whereAmI", input: {} }] },
        { text: "three" },
      ],
    });
    await using runtime = createAgentRuntime({
      pai,
      store: createMemoryThreadStore(),
      model,
      capabilities: { browser: shared(binding) },
    });
    const first = await (await runtime.run({ agentId: "surfer", identity: { userId: "bo" }, message: "1" }))
      .done;
    // A new thread, same user: the user's browser, still on the page the first run left it on.
    const second = await (await runtime.run({ agentId: "surfer", identity: { userId: "bo" }, message: "2" }))
      .done;
    const third = await (await runtime.run({ agentId: "surfer", identity: { userId: "cy" }, message: "3" }))
      .done;
    expect(second.threadId).not.toBe(first.threadId);

    const bo1 = outputsOf(first.messages, "browse")[0];
    const bo2 = outputsOf(second.messages, "whereAmI")[0];
    const cy = outputsOf(third.messages, "whereAmI")[0];
    expect(bo2?.containerId).toBe(bo1?.containerId);
    expect(bo2).toMatchObject({ url: `${origin}/?run=1`, title: "Greeter" });
    expect(cy?.containerId).not.toBe(bo1?.containerId);
    expect(cy).toMatchObject({ url: "about:blank" });

    const leases = runtime.leases();
    expect(leases).toHaveLength(2);
    expect(leases.every((lease) => lease.lifetime === "user")).toBe(true);
    expect(new Set(leases.map((lease) => lease.resourceId))).toEqual(
      new Set([bo1?.containerId, cy?.containerId]),
    );
  });

  it("provisions nothing for a run that never touches the browser", async () => {
    let provisions = 0;
    const before = binding.metrics()?.borrowed ?? 0;
    await using runtime = createAgentRuntime({
      pai,
      store: createMemoryThreadStore(),
      model: createScriptedModel({
        steps: [{ toolCalls: [{ toolName: "note", input: { text: "x" } }] }, { text: "noted" }],
      }),
      capabilities: { browser: shared(binding, () => provisions++) },
    });
    const result = await (await runtime.run({ agentId: "surfer", identity: { userId: "dee" }, message: "x" }))
      .done;
    expect(result.status).toBe("completed");
    expect(provisions).toBe(0);
    expect(runtime.leases()).toEqual([]);
    expect(binding.metrics()?.borrowed ?? 0).toBe(before);
  });

  it("drives the facade directly: links, html, evaluate, press, errors as codes, abort and timeouts", async () => {
    const controller = new AbortController();
    await waitFor(() => (binding.metrics()?.available ?? 0) >= 1, "a warm browser");
    const provisionStarted = performance.now();
    const resource = await binding.provision({
      leaseKey: "user:direct",
      lifetime: "user",
      signal: controller.signal,
    });
    const provisionMs = performance.now() - provisionStarted;
    try {
      const page = resource.bind({ signal: controller.signal });
      const roundTripStarted = performance.now();
      await page.goto(`${origin}/about`);
      expect(await page.text()).toContain("We greet.");
      const roundTripMs = performance.now() - roundTripStarted;
      console.log(
        `[browser] warm provision ${provisionMs.toFixed(1)} ms; goto+text ${roundTripMs.toFixed(1)} ms (127.0.0.1)`,
      );

      await page.goto(`${origin}/`);
      expect(await page.links()).toEqual([
        { text: "About us", href: `${origin}/about` },
        { text: "Elsewhere", href: "https://example.invalid/x" },
      ]);
      expect(await page.html()).toContain('<input id="name" name="name">');
      expect(await page.evaluate("({ n: 6 * 7, when: undefined, list: [1, 'a'] })")).toEqual({
        n: 42,
        list: [1, "a"],
      });
      expect(await page.evaluate("Promise.resolve(document.title)")).toBe("Greeter");
      expect(await page.evaluate("undefined")).toBeNull();
      await page.fill("#name", "Eve");
      await page.press("#name", "Enter");
      expect(await page.text("#result")).toBe("Hello, Eve!");
      expect(await page.goto(`${origin}/missing`)).toMatchObject({ status: 404, title: "nope" });

      const codeOf = (promise: Promise<unknown>) =>
        promise.then(
          () => "resolved",
          (error: unknown) => {
            expect(PaiError.isInstance(error)).toBe(false);
            expect(BrowserError.isInstance(error)).toBe(true);
            return (error as BrowserError).code;
          },
        );
      expect(await codeOf(page.goto("file:///etc/passwd"))).toBe("INVALID_ARGUMENT");
      expect(await codeOf(page.goto("not a url"))).toBe("INVALID_ARGUMENT");
      expect(await codeOf(page.text("#nothing-here", { timeoutMs: 300 }))).toBe("NOT_FOUND");
      expect(await codeOf(page.click("#nothing-here", { timeoutMs: 300 }))).toBe("NOT_FOUND");
      expect(await codeOf(page.evaluate("(() => { throw new Error('boom') })()"))).toBe(
        "BROWSER_EVALUATION_FAILED",
      );
      expect(await codeOf(page.goto("http://127.0.0.1:1/"))).toBe("BROWSER_NAVIGATION_FAILED");
      expect(await codeOf(page.goto(`${origin}/slow`, { timeoutMs: 500 }))).toBe("BROWSER_TIMEOUT");
      expect(await page.goto(`${origin}/about`)).toMatchObject({ status: 200, title: "About" });

      // A caller's abort ends the operation at once, and the browser keeps working.
      const call = new AbortController();
      const started = performance.now();
      const slow = page.goto(`${origin}/slow?abort`, { signal: call.signal });
      setTimeout(() => call.abort(new Error("stop")), 200);
      await expect(slow).rejects.toThrow("stop");
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(await page.goto(`${origin}/about`)).toMatchObject({ status: 200, title: "About" });

      // The run's signal (bind) reaches every operation too.
      controller.abort(new Error("run stopped"));
      await expect(page.text()).rejects.toThrow("run stopped");
      expect(await resource.facade.text()).toContain("We greet.");
    } finally {
      await resource.release();
    }
    expect(await running(resource.resourceId)).toBe(false);
  });

  it("runs Chromium hardened: non-root, no capabilities, read-only root, shm, network none, no DevTools port", async () => {
    const resource = await binding.provision({
      leaseKey: "user:inspect",
      lifetime: "user",
      signal: new AbortController().signal,
    });
    try {
      const { stdout } = await execa("docker", ["inspect", resource.resourceId]);
      const [inspection] = JSON.parse(stdout) as Array<{
        Config: { User: string; Labels: Record<string, string> };
        HostConfig: {
          CapDrop: string[];
          CapAdd: string[];
          SecurityOpt: string[];
          ReadonlyRootfs: boolean;
          ShmSize: number;
          PidsLimit: number;
          Memory: number;
          NetworkMode: string;
        };
      }>;
      // The main process and the agent run as root, keeping only what starting Chromium as 1000 needs.
      expect(inspection?.Config.User).toBe("0:0");
      expect([...(inspection?.HostConfig.CapAdd ?? [])].sort()).toEqual([
        "KILL",
        "SETGID",
        "SETPCAP",
        "SETUID",
      ]);
      expect(inspection?.Config.Labels[poolLabels.pool]).toBe(poolId);
      expect(inspection?.HostConfig).toMatchObject({
        CapDrop: ["ALL"],
        SecurityOpt: ["no-new-privileges"],
        ReadonlyRootfs: true,
        NetworkMode: "none",
        PidsLimit: 512,
        Memory: 1024 ** 3,
      });
      expect(inspection?.HostConfig.ShmSize).toBeGreaterThanOrEqual(256 * 1024 * 1024);
      // The one listening socket is the egress proxy's, on the container's own loopback; DevTools is a pipe.
      const sockets = await driver.exec(resource.resourceId, {
        user: "1000:1000", // the profile is Chromium's user's
        cmd: [
          "sh",
          "-c",
          "cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$4 == \"0A\" {print $2}' | sort -u; " +
            "ls /tmp/profile/DevToolsActivePort 2>&1 | grep -c 'No such file'; grep -c remote-debugging-pipe /proc/[0-9]*/cmdline | grep -c ':1$'",
        ],
      });
      const [listening, noPortFile, pipeProcesses] = sockets.stdout.trim().split("\n");
      expect(listening).toBe("0100007F:0C38"); // 127.0.0.1:3128
      expect(noPortFile).toBe("1");
      expect(Number(pipeProcesses)).toBeGreaterThanOrEqual(1);
      const interfaces = await driver.exec(resource.resourceId, { cmd: ["ls", "/sys/class/net"] });
      expect(interfaces.stdout.trim()).toBe("lo");
      // Every Chromium process runs as 1000 with no capability at all, not even in its bounding set.
      const chromium = await driver.exec(resource.resourceId, {
        cmd: [
          "sh",
          "-c",
          'for p in $(pgrep chromium); do awk \'/^(Uid|CapEff|CapPrm|CapBnd):/ {printf "%s ", $2} END {print ""}\' /proc/$p/status; done | sort -u',
        ],
      });
      expect(chromium.stdout).toBe("1000 0000000000000000 0000000000000000 0000000000000000 \n");
      const write = await driver.exec(resource.resourceId, {
        cmd: ["sh", "-c", "touch /etc/x || echo refused"],
      });
      expect(write.stdout).toContain("refused");
    } finally {
      await resource.release();
    }
  });

  it("leaves no container behind when provisioning is cancelled", async () => {
    const before = await poolContainers(poolId);
    const controller = new AbortController();
    controller.abort(new Error("cancelled before start"));
    await expect(
      binding.provision({ leaseKey: "user:cancelled", lifetime: "user", signal: controller.signal }),
    ).rejects.toThrow("cancelled before start");
    const racing = new AbortController();
    const pending = binding.provision({ leaseKey: "user:racing", lifetime: "user", signal: racing.signal });
    racing.abort(new Error("cancelled while acquiring"));
    await expect(pending).rejects.toThrow("cancelled while acquiring");
    expect(binding.metrics()?.borrowed).toBe(0);
    // Whatever was warm stays warm (min 1); no leased container remains.
    const after = await poolContainers(poolId);
    expect(after.length).toBeLessThanOrEqual(Math.max(before.length, 1));
  });

  it("adopts a recorded browser from a new binding (a restarted process), restarting Chromium on its profile", async () => {
    const resource = await binding.provision({
      leaseKey: "user:restart",
      lifetime: "user",
      signal: new AbortController().signal,
    });
    const restarted = dockerBrowser({
      image,
      poolId,
      pool: { min: 0, max: 2 },
      network: { allow: [new URL(origin).host] },
    });
    try {
      await resource.facade.goto(`${origin}/about`);
      const again = await restarted.reattach(
        {
          capability: "browser",
          lifetime: "user",
          key: "user:restart",
          resourceId: resource.resourceId,
          meta: resource.meta ?? {},
          createdAt: Date.now(),
          lastUsedAt: Date.now(),
        },
        // Generous: restarting Chromium in the adopted container is slow on a loaded engine.
        AbortSignal.timeout(120_000),
      );
      expect(again?.resourceId).toBe(resource.resourceId);
      // The previous session's Chromium is gone (its DevTools pipe belonged to it); the new one works.
      expect(await again?.facade.goto(`${origin}/about`)).toMatchObject({ title: "About", status: 200 });
      expect(await again?.facade.text()).toContain("We greet.");
      await expect(resource.facade.info({ timeoutMs: 2_000 })).rejects.toMatchObject({
        code: "CAPABILITY_UNAVAILABLE",
      });
      await again?.release();
      expect(await running(resource.resourceId)).toBe(false);
    } finally {
      await restarted.close();
      await resource.release().catch(() => undefined);
    }
  }, 300_000);

  it("leaves no browser container once the runtime that owns the binding closes", async () => {
    const ownPoolId = uniquePoolId("close");
    try {
      const owned = dockerBrowser({ image, poolId: ownPoolId, pool: { min: 1, max: 3 }, network: "none" });
      const runtime = createAgentRuntime({
        pai,
        store: createMemoryThreadStore(),
        model: createScriptedModel({
          steps: [{ toolCalls: [{ toolName: "whereAmI", input: {} }] }, { text: "here" }],
        }),
        capabilities: { browser: owned },
      });
      const result = await (
        await runtime.run({ agentId: "surfer", identity: { userId: "fay" }, message: "where" })
      ).done;
      expect(result.status).toBe("completed");
      expect(outputsOf(result.messages, "whereAmI")[0]).toMatchObject({ url: "about:blank" });
      expect((await poolContainers(ownPoolId)).length).toBeGreaterThanOrEqual(1);
      await runtime.close();
      expect(await poolContainers(ownPoolId)).toEqual([]);
    } finally {
      await removePoolContainers(ownPoolId);
    }
  });
});

describe.skipIf(dockerOptedOut)("the image dockerBrowser() runs by default", () => {
  it("is the package's own browser image, current on the engine (npm test builds it first): nothing to build", async () => {
    const progress: ImageProgress[] = [];
    const poolId = uniquePoolId("default-image");
    const defaults = dockerBrowser({
      poolId,
      pool: { min: 0, max: 1 },
      network: "none",
      onImageProgress: (line) => progress.push(line),
    });
    try {
      await defaults.start();
      expect(defaults.image).toMatch(/^pai\/browser:[0-9a-f]{12}$/);
      expect(defaults.image).toBe(await resolveDefaultBrowserImage());
      expect(progress).toEqual([]);
    } finally {
      await defaults.close();
      await removePoolContainers(poolId);
    }
  });
});
