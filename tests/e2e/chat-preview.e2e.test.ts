// End to end: the chat app's preview card and Terminal panel in Debian's headless Chromium, at 1280×800 and 390×844.
// The chat server (scripted model, real Docker sandbox) runs in this process; the scripted server plan writes
// hello.html and starts `python3 -m http.server 8000`, which the card shows through a preview on a `*.localhost`
// origin of its own; the Terminal opens a shell in the same sandbox over the thread's WebSocket.
// Needs /usr/bin/chromium (tests/e2e/ensure-chromium), the Docker engine and the pai/sandbox image.
import { join } from "node:path";
import type { Page, WebSocket } from "playwright-core";
import { describe, expect, it } from "vitest";
import { SERVED_FILE } from "../../examples/chat/server/scripted-plan.ts";
import { e2eOutputDir, useChatPage } from "./chat-page-fixture.ts";
import { expectNoSidewaysOverflow } from "./expect-no-sideways-overflow.ts";

const VIEWPORTS = [
  { name: "wide", width: 1280, height: 800 },
  { name: "phone", width: 390, height: 844 },
] as const;

/** The rows xterm.js rendered (its DOM renderer: one element per row), trimmed. */
function terminalRows(page: Page): Promise<string[]> {
  return page
    .locator(".terminal-screen .xterm-rows > *")
    .evaluateAll((rows) => rows.map((row) => (row.textContent ?? "").trimEnd()));
}

/** Asks the shell for its terminal's size (`stty size`), read from the screen. */
async function shellSize(page: Page): Promise<{ cols: number; rows: number }> {
  await page.keyboard.type("clear; echo size:$(stty size)");
  await page.keyboard.press("Enter");
  let found: RegExpExecArray | null = null;
  await expect
    .poll(async () => {
      found =
        (await terminalRows(page)).map((row) => /^size:(\d+) (\d+)$/.exec(row)).findLast(Boolean) ?? null;
      return found !== null;
    })
    .toBe(true);
  const [, rows, cols] = found as unknown as RegExpExecArray;
  return { cols: Number(cols), rows: Number(rows) };
}

describe("the chat app's preview card and Terminal in headless Chromium", () => {
  const chat = useChatPage({ name: "chat-preview", poolMax: 2 });

  async function openPage(viewport: { width: number; height: number }): Promise<Page> {
    const context = await chat.browser.newContext({ viewport });
    const page = await context.newPage();
    page.on("pageerror", (error) => chat.pageErrors.push(error.message));
    page.on("console", (message) => {
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
        chat.pageErrors.push(message.text());
      }
    });
    page.on("response", (response) => {
      if (response.status() >= 400) {
        chat.pageErrors.push(`${response.status()} ${response.request().method()} ${response.url()}`);
      }
    });
    return page;
  }

  /** Runs a step; on failure keeps a screenshot. */
  async function step(page: Page, name: string, body: () => Promise<void>): Promise<void> {
    try {
      await body();
      expect(chat.pageErrors).toEqual([]);
    } catch (error) {
      const { width, height } = page.viewportSize()!;
      await page
        .screenshot({ path: join(e2eOutputDir, `chat-preview-failure-${name}-${width}x${height}.png`) })
        .catch(() => undefined);
      throw error;
    }
  }

  for (const viewport of VIEWPORTS) {
    it(`at ${viewport.width}×${viewport.height}: the agent serves the folder and the card shows python's listing; the terminal echoes`, async () => {
      const page = await openPage(viewport);
      const shot = (what: string) =>
        page.screenshot({
          path: join(e2eOutputDir, `chat-preview-${what}-${viewport.width}x${viewport.height}.png`),
        });
      try {
        await step(page, "preview", async () => {
          await page.goto(chat.server.url);
          await page.locator(".suggestion", { hasText: "Start a web server and show me the page" }).click();
          const card = page.locator('.pai-tool[data-tool-id="startServer"]');
          await card.locator('.preview[data-preview="starting"]').waitFor({ timeout: 120_000 });
          await card.locator('.preview[data-preview="live"]').waitFor({ timeout: 120_000 });
          expect(await card.getAttribute("data-status")).toBe("done");

          // the page inside the frame: python's directory listing, with the file the plan wrote
          const frame = page.frameLocator(".preview-frame");
          await frame.locator("h1", { hasText: "Directory listing for /" }).waitFor({ timeout: 30_000 });
          expect(await frame.locator("a", { hasText: SERVED_FILE }).getAttribute("href")).toBe(SERVED_FILE);

          // its origin is a *.localhost host of its own, not the app's
          const appHost = new URL(chat.server.url).host;
          const href = (await card.locator("a.preview-open").getAttribute("href"))!;
          const previewUrl = new URL(href);
          expect(previewUrl.hostname).toMatch(/^[a-z0-9-]+\.localhost$/);
          expect(previewUrl.host).not.toBe(appHost);
          expect(await card.locator("a.preview-open").getAttribute("rel")).toBe("noopener noreferrer");
          expect(await card.locator("a.preview-open").getAttribute("target")).toBe("_blank");
          expect(await card.locator(".preview-address").textContent()).toBe(previewUrl.host);
          expect(await card.locator(".preview-meta").textContent()).toMatch(/^port 8000 · open until /);
          // the app's page cannot reach into the preview's document: another origin
          expect(
            await page.locator(".preview-frame").evaluate((element: HTMLIFrameElement) => {
              try {
                return element.contentWindow?.document.body.innerHTML === undefined
                  ? "no document"
                  : "readable";
              } catch (error) {
                return (error as Error).name;
              }
            }),
          ).toBe("SecurityError");

          // the Open link opens it in a tab of its own
          const [tab] = await Promise.all([
            page.context().waitForEvent("page"),
            card.locator("a.preview-open").click(),
          ]);
          try {
            await tab.locator("h1", { hasText: "Directory listing for /" }).waitFor();
            expect(new URL(tab.url()).host).toBe(previewUrl.host);
          } finally {
            await tab.close();
          }

          await page
            .locator(".message.assistant .text", { hasText: "python's http.server runs in the sandbox" })
            .waitFor({ timeout: 60_000 });
          await card.scrollIntoViewIfNeeded();
          await expectNoSidewaysOverflow(page);
          await shot("card");
        });

        await step(page, "terminal", async () => {
          const sockets: WebSocket[] = [];
          page.on("websocket", (socket) => sockets.push(socket));
          const toggle = page.locator(".conversation-head .terminal-toggle");
          await toggle.click();
          expect(await toggle.getAttribute("aria-expanded")).toBe("true");
          const panel = page.locator(".terminal-panel");
          await panel.locator(".terminal-status", { hasText: "Connected" }).waitFor({ timeout: 60_000 });
          // docked under the conversation on a wide window, a bottom sheet over it on a phone: the window's full
          // width, down to its bottom edge
          const box = (await panel.boundingBox())!;
          expect(box.y + box.height).toBeCloseTo(viewport.height, 0);
          if (viewport.name === "phone") expect(box.width).toBe(viewport.width);
          else expect(box.width).toBeLessThan(viewport.width);
          expect(sockets.map((socket) => new URL(socket.url()).pathname)).toEqual([
            `/api/threads/${page.url().split("#/threads/")[1]}/terminal`,
          ]);
          const query = new URL(sockets[0]!.url()).searchParams;
          expect(Number(query.get("cols"))).toBeGreaterThan(10);
          expect(Number(query.get("rows"))).toBeGreaterThan(3);

          // the keyboard reaches the shell, and its output the screen
          await page.locator(".terminal-screen .xterm").click();
          await page.keyboard.type("echo hi");
          await page.keyboard.press("Enter");
          await expect.poll(() => terminalRows(page), { timeout: 30_000 }).toContain("hi");
          // the same sandbox as the agent's: the file the plan wrote is there
          await page.keyboard.type(`ls ${SERVED_FILE}`);
          await page.keyboard.press("Enter");
          await expect.poll(() => terminalRows(page), { timeout: 30_000 }).toContain(SERVED_FILE);
          await expectNoSidewaysOverflow(page);
          await shot("terminal");

          // Ctrl-C reaches the foreground command (once it runs: it says so)
          await page.keyboard.type(`python3 -c "import time; print('waiting', flush=True); time.sleep(600)"`);
          await page.keyboard.press("Enter");
          await expect.poll(() => terminalRows(page), { timeout: 30_000 }).toContain("waiting");
          await page.keyboard.press("Control+C");
          await expect.poll(() => terminalRows(page), { timeout: 30_000 }).toContain("KeyboardInterrupt");
          await page.keyboard.type("echo interrupted");
          await page.keyboard.press("Enter");
          await expect.poll(() => terminalRows(page), { timeout: 30_000 }).toContain("interrupted");

          // the shell's terminal has the panel's size, and follows it when the window resizes
          const initial = await shellSize(page);
          expect(initial).toEqual({ cols: Number(query.get("cols")), rows: Number(query.get("rows")) });
          await page.setViewportSize({ width: viewport.width - 200, height: viewport.height - 200 });
          await expect.poll(() => shellSize(page), { timeout: 30_000 }).not.toEqual(initial);
          const resized = await shellSize(page);
          expect(resized.cols).toBeLessThan(initial.cols);
          expect(resized.rows).toBeLessThan(initial.rows);
          await page.setViewportSize(viewport);

          // the shell ends: the panel says how, and Reconnect opens a new one
          await page.keyboard.type("exit 3");
          await page.keyboard.press("Enter");
          await panel.locator(".terminal-status", { hasText: "Ended (exit 3)" }).waitFor({ timeout: 30_000 });
          await panel.locator(".terminal-reconnect").click();
          await panel.locator(".terminal-status", { hasText: "Connected" }).waitFor({ timeout: 60_000 });
          expect(sockets).toHaveLength(2);
          await page.keyboard.type("echo again");
          await page.keyboard.press("Enter");
          await expect.poll(() => terminalRows(page), { timeout: 30_000 }).toContain("again");

          // closing the panel closes the socket (which ends the shell) and gives focus back to the button
          await panel.locator(".terminal-close").click();
          await panel.waitFor({ state: "detached" });
          await expect.poll(() => sockets[1]!.isClosed()).toBe(true);
          expect(
            await page.evaluate(() => document.activeElement?.classList.contains("terminal-toggle")),
          ).toBe(true);
          await expectNoSidewaysOverflow(page);
        });
      } finally {
        await page.context().close();
      }
    }, 360_000);
  }
});
