// End to end: `npm start`'s server (scripted model, real Docker sandbox) driven by Debian's headless Chromium.
// Needs /usr/bin/chromium (tests/e2e/ensure-chromium), the Docker engine and the pai/sandbox image.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import { describe, expect, it } from "vitest";

const repoRoot = fileURLToPath(new URL("../..", import.meta.url));
const outputDir = join(repoRoot, "test-results", "e2e");
const CHROMIUM = "/usr/bin/chromium";
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

function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

const toolCard = (page: Page, toolId: string) => page.locator(`.pai-tool[data-tool-id="${toolId}"]`).last();

async function send(page: Page, text: string): Promise<void> {
  await page.locator(".composer textarea").fill(text);
  await page.locator(".composer textarea").press("Enter");
}

describe("chat app in headless Chromium", () => {
  it("streams command output, takes an approval, and restores the thread after a reload", async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run tests/e2e/ensure-chromium`);
    await mkdir(outputDir, { recursive: true });
    const dataDir = await mkdtemp(join(tmpdir(), "pai-chat-e2e-"));
    let server: Awaited<ReturnType<typeof startServer>> | undefined;
    let browser: Browser | undefined;
    let page: Page | undefined;
    const pageErrors: string[] = [];
    try {
      server = await startServer(dataDir);
      browser = await launchChromium();
      page = await browser.newPage({ viewport: { width: 1280, height: 1100 } });
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

      await page.goto(server.url);
      await page.locator(".composer textarea").waitFor();
      const threadUrl = page.url();
      expect(threadUrl).toMatch(/#\/threads\/[\w-]+$/);

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

      // the commit waits for a person
      const commit = toolCard(page, "commitWork");
      await commit
        .locator(".pai-tool-question", { hasText: 'Commit fib.py with the message "Add fib.py"?' })
        .waitFor();
      await page.screenshot({ path: join(outputDir, "chat-approval.png") });
      await commit.locator(".pai-tool-approve").click();
      await page
        .locator(".message.assistant .text", { hasText: /Committed fib\.py as [0-9a-f]{7}/ })
        .waitFor();
      await page.locator('.pai-tool[data-tool-id="commitWork"][data-status="done"]').waitFor();
      expect(await commit.locator(".pai-tool-approve").count()).toBe(0);
      expect(await commit.locator(".pai-tool-data pre").textContent()).toMatch(/[0-9a-f]{7} Add fib\.py/);
      await page.locator(".sidebar .thread.active", { hasText: "Show me the sandbox at work" }).waitFor();
      await page.screenshot({ path: join(outputDir, "chat.png"), fullPage: false });

      // a reload restores the same thread: messages, tool cards and their streamed output
      await page.reload();
      expect(page.url()).toBe(threadUrl);
      await page.locator(".message.user .text", { hasText: "Show me the sandbox at work" }).waitFor();
      await page.locator('.pai-tool[data-tool-id="runScript"][data-status="done"]').waitFor();
      expect(await toolCard(page, "runScript").locator(".pai-tool-data pre").textContent()).toContain(
        "fib(11) = 89",
      );
      await page.locator('.pai-tool[data-tool-id="commitWork"][data-status="done"]').waitFor();
      await page.locator(".message.assistant .text", { hasText: /Committed fib\.py as/ }).waitFor();
      expect(await page.locator(".pai-tool-approve").count()).toBe(0);
      await page.screenshot({ path: join(outputDir, "chat-reloaded.png"), fullPage: false });

      // a second thread: deny the commit, and the model is told
      await page.locator(".new-chat").click();
      await page.waitForURL((url) => url.toString() !== threadUrl);
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
      await toolCard(page, "commitWork").locator(".pai-tool-deny").click();
      await page.locator(".message.assistant .text", { hasText: "You denied the commit" }).waitFor();
      await page.locator('.pai-tool[data-tool-id="commitWork"][data-status="denied"]').waitFor();
      expect(await page.locator(".sidebar .thread").count()).toBe(2);

      expect(pageErrors).toEqual([]);
    } catch (error) {
      await page?.screenshot({ path: join(outputDir, "chat-failure.png") }).catch(() => undefined);
      if (pageErrors.length > 0) console.error(`page errors:\n${pageErrors.join("\n")}`);
      if (server) console.error(`server output:\n${server.logs()}`);
      throw error;
    } finally {
      await browser?.close().catch(() => undefined);
      if (server) await stopServer(server.child);
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 240_000);
});
