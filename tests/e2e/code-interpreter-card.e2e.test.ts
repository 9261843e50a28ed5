// End to end: @pai/react's code interpreter card in Debian's headless Chromium. The server is PAI's HTTP handler on
// 127.0.0.1 with `defineCodeInterpreterTool` over a real Docker sandbox (IPython in the pai/sandbox image) and a
// scripted model that runs two cells: one prints, waits, prints again, draws a chart and displays a table whose HTML
// carries a script, an event handler, a javascript: link and external loads; the other raises. The page
// (`code-interpreter-page/`, built with Vite) is `usePaiChat` and `<Assistant.Tool>` only.
// Needs /usr/bin/chromium (tests/e2e/ensure-chromium), the Docker engine and the pai/sandbox image.
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { extname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type AgentRuntime,
  createAgentRuntime,
  createMemoryThreadStore,
  createPai,
  createPaiHandler,
  defineAgent,
  toNodeListener,
} from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { defineCodeInterpreterTool, dockerSandbox } from "@pai/sandbox";
import { type Browser, chromium, type Page } from "playwright-core";
import { build, defaultClientConditions } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  poolContainers,
  removePoolContainers,
  sandboxImage,
  uniquePoolId,
} from "../sandbox/docker-helpers.ts";

const CHROMIUM = "/usr/bin/chromium";
const pageRoot = fileURLToPath(new URL("./code-interpreter-page", import.meta.url));
const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};

/** Streams two lines with a pause between, draws a chart, displays a table whose HTML is hostile. */
const RICH_CELL = `import time
import pandas as pd
import matplotlib.pyplot as plt
from IPython.display import HTML, display
print("first line", flush=True)
time.sleep(2)
print("second line", flush=True)
plt.plot([1, 3, 2])
frame = pd.DataFrame({
    "city": ["Oslo", '<img src="/leak-img" onerror="window.__pwned = 1">'],
    "note": ['<script>window.__pwned = 2</script>', '<a href="javascript:window.__pwned = 3">open</a>'],
})
html = frame.to_html(escape=False).replace("<td>", '<td style="background: url(/leak-css)" onclick="window.__pwned = 4">', 1)
display(HTML(html + '<iframe src="/leak-frame"></iframe><svg><script>window.__pwned = 5</script></svg>'))`;

const ERROR_CELL = `def divide(a, b):
    return a / b
divide(1, 0)`;

/** Serves `outDir`'s built page beside the PAI API. */
async function builtPage(outDir: string): Promise<Map<string, { type: string; body: Buffer }>> {
  await build({
    configFile: false,
    root: pageRoot,
    logLevel: "warn",
    resolve: { conditions: ["@pai/source", ...defaultClientConditions] },
    build: {
      outDir,
      emptyOutDir: true,
      chunkSizeWarningLimit: 2000,
      rolldownOptions: {
        onwarn(warning, warn) {
          // swr (under @ai-sdk/react) marks its modules "use client"; that means nothing in a client bundle
          if (warning.code === "MODULE_LEVEL_DIRECTIVE") return;
          warn(warning);
        },
      },
    },
  });
  const pages = new Map<string, { type: string; body: Buffer }>();
  for (const entry of await readdir(outDir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = join(entry.parentPath, entry.name);
    const path = `/${relative(outDir, file)}`;
    pages.set(path === "/index.html" ? "/" : path, {
      type: contentTypes[extname(file)] ?? "application/octet-stream",
      body: await readFile(file),
    });
  }
  return pages;
}

describe("the code interpreter card in headless Chromium", () => {
  const poolId = uniquePoolId("interpreter-card");
  let runtime: AgentRuntime;
  let server: Server;
  let url: string;
  let outDir: string;
  let browser: Browser | undefined;
  let page: Page;
  const requested: string[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run tests/e2e/ensure-chromium`);
    outDir = await mkdtemp(join(tmpdir(), "pai-interpreter-page-"));
    const pages = await builtPage(outDir);
    runtime = createAgentRuntime({
      pai: createPai({
        agents: {
          analyst: defineAgent({
            identity: z.object({ userId: z.string() }),
            tools: { python: defineCodeInterpreterTool({ languages: ["python"] }) },
          }),
        },
      }),
      store: createMemoryThreadStore(),
      model: createScriptedModel({
        steps: [
          { toolCalls: [{ toolName: "python", input: { code: RICH_CELL } }] },
          { toolCalls: [{ toolName: "python", input: { code: ERROR_CELL } }] },
          { text: "Both cells ran." },
        ],
      }),
      capabilities: { sandbox: dockerSandbox({ image: sandboxImage, poolId, pool: { min: 1, max: 1 } }) },
    });
    await runtime.startCapabilities();
    const api = toNodeListener(
      createPaiHandler({
        runtime,
        authenticate: (request) => {
          const user = request.headers.get("x-user");
          return user ? { userId: user } : null;
        },
      }),
    );
    server = createServer((req, res) => {
      const found = pages.get((req.url ?? "/").split("?")[0]!);
      if (!found) return void api(req, res);
      res.writeHead(200, { "content-type": found.type });
      res.end(found.body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
      ],
    });
    page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
    page.on("request", (request) => requested.push(new URL(request.url()).pathname));
    page.on("pageerror", (error) => pageErrors.push(error.message));
  }, 180_000);

  afterAll(async () => {
    try {
      await browser?.close().catch(() => undefined);
      if (server) {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await closed;
      }
      await runtime?.close();
      expect(await poolContainers(poolId)).toEqual([]);
    } finally {
      await removePoolContainers(poolId);
      if (outDir) await rm(outDir, { recursive: true, force: true });
    }
  });

  it("shows the code, the output as it streams, the chart, a sanitised table and a traceback", async () => {
    await page.goto(url);
    await page.locator("button.send").click();
    const rich = page.locator(".pai-code-interpreter").first();

    // streamed: the first line is on the page while the cell still runs, before the second is printed
    await page.waitForFunction(
      () => {
        const card = document.querySelector(".pai-code-interpreter");
        const output = card?.querySelector(".pai-code-output")?.textContent ?? "";
        return card?.getAttribute("data-status") === "running" && output.includes("first line");
      },
      undefined,
      { timeout: 60_000 },
    );
    expect(await rich.locator(".pai-code-output").textContent()).not.toContain("second line");
    await expect.poll(() => rich.getAttribute("data-status"), { timeout: 60_000 }).toBe("done");

    expect(await rich.locator(".pai-code-cell").textContent()).toBe(RICH_CELL);
    expect(await rich.locator(".pai-code-output").textContent()).toBe("first line\nsecond line\n");
    // the chart: a PNG the browser decoded
    const chart = rich.locator('[data-kind="image"] img');
    expect(await chart.getAttribute("src")).toMatch(/^data:image\/png;base64,/);
    expect(
      await chart.evaluate((image: HTMLImageElement) => image.complete && image.naturalWidth > 100),
    ).toBe(true);
    // the table: its text is there, nothing that runs, styles or loads is
    const table = rich.locator('[data-kind="html"]');
    expect(await table.locator("td").allTextContents()).toEqual(["Oslo", "", "", "open"]);
    expect(await table.locator("table.dataframe").count()).toBe(1);
    expect(
      await table
        .locator("script, img, a, iframe, svg, [style], [onclick], [onerror], [href], [src]")
        .count(),
    ).toBe(0);

    const failing = page.locator(".pai-code-interpreter").nth(1);
    await expect.poll(() => failing.getAttribute("data-status"), { timeout: 60_000 }).toBe("done");
    expect(await failing.locator(".pai-code-error .pai-tool-error").textContent()).toBe(
      "ZeroDivisionError: division by zero",
    );
    const traceback = (await failing.locator(".pai-code-traceback").textContent()) ?? "";
    expect(traceback).toContain("divide(1, 0)");
    expect(traceback).toContain("return a / b");
    await page.locator("p.text", { hasText: "Both cells ran." }).waitFor({ timeout: 30_000 });

    // nothing of the hostile HTML ran or loaded
    expect(await page.evaluate(() => (window as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(requested.filter((path) => path.startsWith("/leak"))).toEqual([]);
    expect(pageErrors).toEqual([]);
  }, 180_000);
});
