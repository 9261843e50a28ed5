// End to end: the AI SDK's plain `useChat` in Debian's headless Chromium against PAI's HTTP handler — native
// approvals (`addToolApprovalResponse`), a client tool (`addToolOutput`), both sent by `sendAutomaticallyWhen`, and
// a changed call refused. The page (`use-chat-page/`) is built with Vite; the server is `createPaiHandler` through
// `toNodeListener` on 127.0.0.1 with a scripted model and a SQLite file (no Docker).
// Needs /usr/bin/chromium (tests/e2e/ensure-chromium).
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { extname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import { build } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type NativeChatServer, startNativeChatServer } from "../fixtures/native-chat-server.ts";

const CHROMIUM = "/usr/bin/chromium";
const pageRoot = fileURLToPath(new URL("./use-chat-page", import.meta.url));
const outputDir = fileURLToPath(new URL("../../test-results/e2e", import.meta.url));
const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};

/** Builds the page with Vite into `outDir` and serves its files from `server`. */
async function servePage(server: NativeChatServer, outDir: string): Promise<void> {
  await build({
    configFile: false,
    root: pageRoot,
    logLevel: "warn",
    build: { outDir, emptyOutDir: true },
  });
  const files = async (dir: string): Promise<string[]> =>
    (
      await Promise.all(
        (
          await readdir(dir, { withFileTypes: true })
        ).map((entry) => (entry.isDirectory() ? files(join(dir, entry.name)) : [join(dir, entry.name)])),
      )
    ).flat();
  for (const file of await files(outDir)) {
    const body = await readFile(file);
    const type = contentTypes[extname(file)] ?? "application/octet-stream";
    const path = `/${relative(outDir, file)}`;
    server.pages.set(path === "/index.html" ? "/" : path, { type, body });
  }
}

describe("plain useChat in headless Chromium against PAI", () => {
  let server: NativeChatServer;
  let browser: Browser | undefined;
  let page: Page;
  let outDir: string;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run tests/e2e/ensure-chromium`);
    await mkdir(outputDir, { recursive: true });
    outDir = await mkdtemp(join(tmpdir(), "pai-use-chat-page-"));
    server = await startNativeChatServer();
    await servePage(server, outDir);
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
    page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
    page.on("pageerror", (error) => pageErrors.push(error.message));
  }, 120_000);

  afterAll(async () => {
    await browser?.close().catch(() => undefined);
    await server?.close();
    if (outDir) await rm(outDir, { recursive: true, force: true });
  });

  async function open(threadId: string): Promise<void> {
    await page.goto(`${server.url}/?thread=${threadId}`);
    await page.locator("form input").waitFor();
  }

  async function send(text: string): Promise<void> {
    await page.locator("form input").fill(text);
    await page.locator("form button[type=submit]").click();
  }

  const tool = (type: string) => page.locator(`.tool[data-type="tool-${type}"]`).last();
  const reply = (text: string | RegExp) => page.locator(".message.assistant .text", { hasText: text });

  async function actionsOf(threadId: string) {
    return server.runtime.store.listPendingActions({ threadId });
  }

  it("approves a suspended call with addToolApprovalResponse; the call runs once and the model answers", async () => {
    const before = server.deployments();
    await open("b-approve");
    await send("deploy api");
    await page.locator('.tool[data-type="tool-deploy"][data-state="approval-requested"]').waitFor();
    await page.screenshot({ path: join(outputDir, "use-chat-approval.png") });
    await tool("deploy").locator(".approve").click();
    await reply("Deployed api.").waitFor();
    await page.locator('.tool[data-type="tool-deploy"][data-state="output-available"]').waitFor();
    await page.screenshot({ path: join(outputDir, "use-chat-approved.png") });
    expect(server.deployments()).toBe(before + 1);
    expect((await actionsOf("b-approve"))[0]).toMatchObject({ status: "resumed" });
    expect(await page.locator("#error").textContent()).toBe("");
    expect(pageErrors).toEqual([]);
  });

  it("denies one: the tool never runs and the model is told why", async () => {
    const before = server.deployments();
    await open("b-deny");
    await send("deploy api");
    await tool("deploy").locator(".deny").click();
    await reply("Denied: not from the browser.").waitFor();
    await page.locator('.tool[data-type="tool-deploy"][data-state="output-denied"]').waitFor();
    expect(server.deployments()).toBe(before);
    expect((await actionsOf("b-deny"))[0]).toMatchObject({ status: "denied" });
    expect(pageErrors).toEqual([]);
  });

  it("answers a client tool with addToolOutput", async () => {
    await open("b-client");
    await send("pick a color");
    await tool("pickColor").locator(".color.blue").click();
    await reply("Picked blue.").waitFor();
    await page.locator('.tool[data-type="tool-pickColor"][data-state="output-available"]').waitFor();
    expect((await actionsOf("b-client"))[0]).toMatchObject({ kind: "client", status: "succeeded" });
    expect(pageErrors).toEqual([]);
  });

  it("refuses an approval of a call changed in the browser; after a reload the stored approval is answered", async () => {
    const before = server.deployments();
    await open("b-changed");
    await send("deploy api");
    await tool("deploy").locator(".approve-changed").click();
    await page.locator("#error", { hasText: "STALE_ANSWER" }).waitFor();
    expect(server.deployments()).toBe(before);
    expect((await actionsOf("b-changed"))[0]).toMatchObject({ status: "pending" });

    // the stored thread carries the native approval: a fresh page answers it
    await page.reload();
    await page.locator('.tool[data-type="tool-deploy"][data-state="approval-requested"]').waitFor();
    await tool("deploy").locator(".approve").click();
    await reply("Deployed api.").waitFor();
    expect(server.deployments()).toBe(before + 1);
    expect(pageErrors).toEqual([]);
  });
});
