// End to end: `npm start`'s server (scripted model, real Docker sandbox) driven by Debian's headless Chromium.
// Needs /usr/bin/chromium (tests/e2e/ensure-chromium), the Docker engine and the pai/sandbox image.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectNoSidewaysOverflow } from "./expect-no-sideways-overflow.ts";
import { launchChromium } from "./launch-chromium.ts";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const outputDir = join(repoRoot, "test-results", "e2e");
const MODEL_VARIABLES = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "PAI_MODEL_BASE_URL", "PAI_MODEL"];

/** Starts `examples/chat/server.ts` on a free port with its own database and pool; resolves with its URL. */
async function startServer(
  dataDir: string,
): Promise<{ child: ChildProcess; url: string; logs: () => string }> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: "0",
    PAI_CHAT_DB: join(dataDir, "chat.db"),
    PAI_CHAT_POOL_ID: `pai-chat-e2e-${process.pid}`,
  };
  for (const name of MODEL_VARIABLES) delete env[name];
  const localNode = join(repoRoot, "node_modules", ".bin", "node");
  const child = spawn(existsSync(localNode) ? localNode : process.execPath, ["examples/chat/server.ts"], {
    cwd: repoRoot,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the server did not start in time:\n${output}`)),
      120_000,
    );
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /PAI chat on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code}) before listening:\n${output}`));
    });
  });
  return { child, url, logs: () => output };
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  await exited;
  clearTimeout(timer);
}

const toolCard = (page: Page, toolId: string) => page.locator(`.pai-tool[data-tool-id="${toolId}"]`).last();

const WIDE = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

async function send(page: Page, text: string): Promise<void> {
  await page.locator(".composer textarea").fill(text);
  await page.locator(".composer textarea").press("Enter");
}

async function screenshot(page: Page, name: string): Promise<void> {
  const { width, height } = page.viewportSize()!;
  await page.screenshot({ path: join(outputDir, `chat-${name}-${width}x${height}.png`) });
}

/** Records every `data-status` each tool card takes, in order, from now on (read with `statusesOf`). */
async function recordStatuses(page: Page): Promise<void> {
  await page.evaluate(() => {
    const seen: Record<string, string[]> = {};
    (window as unknown as { paiStatuses: typeof seen }).paiStatuses = seen;
    const record = () => {
      for (const card of document.querySelectorAll(".pai-tool")) {
        const id = card.getAttribute("data-tool-call-id") ?? "";
        const status = card.getAttribute("data-status") ?? "";
        seen[id] ??= [];
        if (seen[id].at(-1) !== status) seen[id].push(status);
      }
    };
    record();
    new MutationObserver(record).observe(document.body, {
      subtree: true,
      childList: true,
      attributes: true,
      attributeFilter: ["data-status"],
    });
  });
}

async function statusesOf(page: Page, toolId: string): Promise<string[]> {
  const callId = await toolCard(page, toolId).getAttribute("data-tool-call-id");
  return page.evaluate(
    (id) => (window as unknown as { paiStatuses: Record<string, string[]> }).paiStatuses[id ?? ""] ?? [],
    callId,
  );
}

async function focusedId(page: Page): Promise<string | undefined> {
  return page.evaluate(() => document.activeElement?.id);
}

describe("chat app in headless Chromium", () => {
  let dataDir: string;
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  let browser: Browser | undefined;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    await mkdir(outputDir, { recursive: true });
    dataDir = await mkdtemp(join(tmpdir(), "pai-chat-e2e-"));
    server = await startServer(dataDir);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: WIDE });
    page.on("pageerror", (error) => pageErrors.push(error.message));
    page.on("console", (message) => {
      // failed requests are reported below with their URL
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
        pageErrors.push(message.text());
      }
    });
    page.on("response", (response) => {
      if (response.status() >= 400)
        pageErrors.push(`${response.status()} ${response.request().method()} ${response.url()}`);
    });
  }, 180_000);

  afterAll(async () => {
    try {
      if (pageErrors.length > 0) console.error(`page errors:\n${pageErrors.join("\n")}`);
    } finally {
      await browser?.close().catch(() => undefined);
      if (server) await stopServer(server.child);
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  /** Runs a step; on failure keeps a screenshot and the server's output. */
  async function step(name: string, body: () => Promise<void>): Promise<void> {
    try {
      await body();
      expect(pageErrors).toEqual([]);
    } catch (error) {
      await page.screenshot({ path: join(outputDir, `chat-failure-${name}.png`) }).catch(() => undefined);
      if (server) console.error(`server output:\n${server.logs()}`);
      throw error;
    }
  }

  it("streams command output, takes an approval (Approved, Running, Done) and restores the thread after a reload", async () => {
    await step("approve", async () => {
      await page.setViewportSize(WIDE);
      await page.goto(server!.url);
      await page.locator(".composer textarea").waitFor();
      const threadUrl = page.url();
      expect(threadUrl).toMatch(/#\/threads\/[\w-]+$/);
      await screenshot(page, "empty");
      await recordStatuses(page);

      await send(page, "Show me the sandbox at work");
      // the command's output streams in while the tool is still running
      const runScript = toolCard(page, "runScript");
      await page
        .locator('.pai-tool[data-tool-id="runScript"][data-status="running"] .pai-tool-data pre', {
          hasText: "fib(0) = 0",
        })
        .waitFor({ timeout: 60_000 });
      await runScript.locator(".pai-tool-data pre", { hasText: "fib(11) = 89" }).waitFor();
      await page.locator('.pai-tool[data-tool-id="runScript"][data-status="done"]').waitFor();
      expect(await runScript.locator(".pai-tool-name").textContent()).toContain("Run a script");

      // the commit waits for a person: the question first, the input folded under it; the thread is marked
      const commit = toolCard(page, "commitWork");
      await commit
        .locator(".pai-tool-question", { hasText: 'Commit fib.py with the message "Add fib.py"?' })
        .waitFor();
      expect(await commit.locator(".pai-tool-name").textContent()).toBe("Commit to git");
      expect(
        await commit.locator(".pai-tool-approval details.pai-tool-input").getAttribute("open"),
      ).toBeNull();
      await page
        .locator('.sidebar .thread.active[data-waiting="true"]', { hasText: "Needs approval" })
        .waitFor();
      await expectNoSidewaysOverflow(page);
      await screenshot(page, "approval");

      await commit.locator(".pai-tool-approve").click();
      await page
        .locator(".message.assistant .text", { hasText: /Committed fib\.py as [0-9a-f]{7}/ })
        .waitFor();
      await page.locator('.pai-tool[data-tool-id="commitWork"][data-status="done"]').waitFor();
      // Approved the moment it was clicked, Running once the server took it, then Done
      const commitStatuses = await statusesOf(page, "commitWork");
      expect(commitStatuses.slice(0, 2)).toEqual(["needs-approval", "approved"]);
      expect(commitStatuses.at(-1)).toBe("done");
      expect(commitStatuses.slice(2, -1).every((status) => ["running", "starting"].includes(status))).toBe(
        true,
      );
      const runStatuses = await statusesOf(page, "runScript");
      expect(runStatuses).toContain("running");
      expect(runStatuses.at(-1)).toBe("done");
      expect(await commit.locator(".pai-tool-answered").textContent()).toBe("Approved");
      expect(await commit.locator(".pai-tool-approve").count()).toBe(0);
      expect(await commit.locator(".pai-tool-data pre").textContent()).toMatch(/[0-9a-f]{7} Add fib\.py/);
      // the buttons are gone: focus is back in the composer, not on the page body
      expect(await focusedId(page)).toBe("composer-input");
      await page.locator(".sidebar .thread.active", { hasText: "Show me the sandbox at work" }).waitFor();
      await page.locator('.sidebar .thread.active:not([data-waiting="true"])').waitFor();
      await expectNoSidewaysOverflow(page);
      await screenshot(page, "done");

      // a reload restores the same thread: messages, tool cards and their streamed output
      await page.reload();
      expect(page.url()).toBe(threadUrl);
      await page.locator(".message.user .text", { hasText: "Show me the sandbox at work" }).waitFor();
      await page.locator('.pai-tool[data-tool-id="runScript"][data-status="done"]').waitFor();
      expect(await toolCard(page, "runScript").locator(".pai-tool-data pre").textContent()).toContain(
        "fib(11) = 89",
      );
      await page.locator('.pai-tool[data-tool-id="commitWork"][data-status="done"]').waitFor();
      expect(await toolCard(page, "commitWork").locator(".pai-tool-answered").textContent()).toBe("Approved");
      await page.locator(".message.assistant .text", { hasText: /Committed fib\.py as/ }).waitFor();
      expect(await page.locator(".pai-tool-approve").count()).toBe(0);
    });
  }, 240_000);

  it("fits a phone: the thread list is a drawer, the composer spans the width, Deny is in reach", async () => {
    await step("phone", async () => {
      await page.setViewportSize(PHONE);
      const firstThreadUrl = page.url();
      // the thread list is off screen until the menu button opens it
      await page.locator(".topbar").waitFor();
      await page.locator(".sidebar").waitFor({ state: "hidden" });
      const composer = await page.locator(".composer-box").boundingBox();
      expect(composer!.width).toBeGreaterThan(PHONE.width - 40);
      await expectNoSidewaysOverflow(page);
      await screenshot(page, "done");

      const menu = page.locator(".topbar button[aria-label='Conversations']");
      await menu.click();
      expect(await menu.getAttribute("aria-expanded")).toBe("true");
      await page.locator(".sidebar .thread", { hasText: "Show me the sandbox at work" }).waitFor();
      // slid in, over the conversation, which cannot be reached meanwhile
      await page.waitForFunction(
        () => document.querySelector(".sidebar")?.getBoundingClientRect().left === 0,
      );
      expect(await page.locator(".main").getAttribute("inert")).not.toBeNull();
      await screenshot(page, "drawer");
      await page.keyboard.press("Escape");
      await page.locator(".sidebar").waitFor({ state: "hidden" });
      expect(await page.evaluate(() => document.activeElement?.getAttribute("aria-label"))).toBe(
        "Conversations",
      );

      // a second thread from the drawer: deny the commit, and the model is told
      await menu.click();
      await page.locator(".sidebar .new-chat").click();
      await page.waitForURL((url) => url.toString() !== firstThreadUrl);
      await send(page, "Again, but I will say no");
      // reloading while the command runs rejoins the run: the output keeps streaming in
      await page
        .locator('.pai-tool[data-tool-id="runScript"][data-status="running"] .pai-tool-data pre', {
          hasText: "fib(0) = 0",
        })
        .waitFor({ timeout: 60_000 });
      const secondThreadUrl = page.url();
      await page.reload();
      expect(page.url()).toBe(secondThreadUrl);
      await toolCard(page, "runScript").locator(".pai-tool-data pre", { hasText: "fib(11) = 89" }).waitFor();
      await page.locator(".message.user .text", { hasText: "Again, but I will say no" }).waitFor();
      const deny = toolCard(page, "commitWork").locator(".pai-tool-deny");
      await deny.waitFor();
      await deny.scrollIntoViewIfNeeded();
      const denyBox = await deny.boundingBox();
      expect(denyBox!.x + denyBox!.width).toBeLessThanOrEqual(PHONE.width);
      await expectNoSidewaysOverflow(page);
      await screenshot(page, "approval");
      await deny.click();
      await page.locator(".message.assistant .text", { hasText: "You denied the commit" }).waitFor();
      await page.locator('.pai-tool[data-tool-id="commitWork"][data-status="denied"]').waitFor();
      expect(await focusedId(page)).toBe("composer-input");
      await menu.click();
      await expect.poll(() => page.locator(".sidebar .thread").count()).toBe(2);
      await page.keyboard.press("Escape");
    });
  }, 240_000);

  it("ends a command's card as Stopped when Stop is pressed while it runs, also after a reload", async () => {
    await step("stop", async () => {
      await page.setViewportSize(WIDE);
      await page.locator(".sidebar .new-chat").click();
      await send(page, "Start something, then I stop it");
      await page
        .locator('.pai-tool[data-tool-id="runScript"][data-status="running"] .pai-tool-data pre', {
          hasText: "fib(1) = 1",
        })
        .waitFor({ timeout: 60_000 });
      await page.locator(".composer .stop").click();
      await page.locator('.pai-tool[data-tool-id="runScript"][data-status="stopped"]').waitFor();
      await page.locator(".composer .send").waitFor();
      // the badge says Stopped; the card does not say it again
      expect(await toolCard(page, "runScript").locator(".pai-tool-status").textContent()).toBe("Stopped");
      expect(await toolCard(page, "runScript").locator(".pai-tool-note, .pai-tool-error").count()).toBe(0);
      expect(await page.locator('.pai-tool[data-tool-id="commitWork"]').count()).toBe(0);
      expect(await focusedId(page)).toBe("composer-input");
      await expectNoSidewaysOverflow(page);
      await screenshot(page, "stopped");
      await page.reload();
      await page.locator('.pai-tool[data-tool-id="runScript"][data-status="stopped"]').waitFor();
    });
  }, 240_000);

  it("plots a chart in the code interpreter card: code, streamed output, the chart, the table, the model's reply", async () => {
    await step("chart", async () => {
      await page.setViewportSize(WIDE);
      await page.locator(".sidebar .new-chat").click();
      await send(page, "Plot a chart of some data");
      const card = toolCard(page, "codeInterpreter");
      await page
        .locator('.pai-tool[data-tool-id="codeInterpreter"][data-status="running"] .pai-code-output', {
          hasText: "loading the CSV…",
        })
        .waitFor({ timeout: 60_000 });
      await page
        .locator('.pai-tool[data-tool-id="codeInterpreter"][data-status="done"]')
        .waitFor({ timeout: 60_000 });
      expect(await card.locator(".pai-tool-name").textContent()).toContain("Code interpreter");
      expect(await card.locator(".pai-code-language").textContent()).toBe("python");
      expect(await card.locator(".pai-code-cell").textContent()).toContain('weather.plot(x="day"');
      expect(await card.locator(".pai-code-output").textContent()).toBe(
        "loading the CSV…\nplotting…\nwarmest: Fri\n",
      );
      expect(await card.locator('[data-kind="html"] td').first().textContent()).toBe("Mon");
      const chart = card.locator('[data-kind="image"] img');
      expect(
        await chart.evaluate((image: HTMLImageElement) => image.complete && image.naturalWidth > 100),
      ).toBe(true);
      await page
        .locator(".message.assistant .text", { hasText: "The chart reached me as an image (image/png)" })
        .waitFor();
      await expectNoSidewaysOverflow(page);
      await screenshot(page, "chart");
    });
  }, 240_000);
});
