// End to end: the chat app's message handling (issue 25, item 5) in Debian's headless Chromium, at 1280×800 and
// 390×844, on one in-process chat server (scripted model, real Docker sandbox). Needs /usr/bin/chromium
// (tests/e2e/ensure-chromium), the Docker engine and the pai/sandbox image.
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { e2eOutputDir, useChatPage } from "./chat-page-fixture.ts";

const VIEWPORTS = [
  { name: "wide", width: 1280, height: 800, approveRuns: 5 },
  { name: "phone", width: 390, height: 844, approveRuns: 5 },
] as const;

/** What the page records from its first script on (read with `recordOf`). */
interface PageRecord {
  /** Every text an assistant message's text part showed, as it showed it. */
  texts: string[];
  /** Moments the typing caret showed while a tool call was running or starting. */
  caretWhileToolRuns: number;
  /** Moments the typing caret showed while the composer offered Send (no run going on). */
  caretWhileIdle: number;
}

/** Installed before the page's own scripts: records what assistant text looked like and when the caret showed. */
function recordPage(): void {
  const record: PageRecord = { texts: [], caretWhileToolRuns: 0, caretWhileIdle: 0 };
  (window as unknown as { paiRecord: PageRecord }).paiRecord = record;
  const look = () => {
    for (const text of document.querySelectorAll(".message.assistant .text")) {
      const shown = text.textContent ?? "";
      if (record.texts.at(-1) !== shown) record.texts.push(shown);
    }
    const caret = [...document.querySelectorAll<HTMLElement>(".markdown > div")].some(
      (root) => root.style.getPropertyValue("--streamdown-caret") !== "",
    );
    if (!caret) return;
    if (document.querySelector('.pai-tool[data-status="running"], .pai-tool[data-status="starting"]'))
      record.caretWhileToolRuns++;
    if (document.querySelector(".composer .send")) record.caretWhileIdle++;
  };
  document.addEventListener("DOMContentLoaded", () =>
    new MutationObserver(look).observe(document.body, {
      subtree: true,
      childList: true,
      characterData: true,
      attributes: true,
      attributeFilter: ["data-status", "style", "class"],
    }),
  );
}

function recordOf(page: Page): Promise<PageRecord> {
  return page.evaluate(() => (window as unknown as { paiRecord: PageRecord }).paiRecord);
}

async function focusedId(page: Page): Promise<string | undefined> {
  return page.evaluate(() => document.activeElement?.id);
}

/** How far (px) the end of the conversation is below what the scroller shows. */
function distanceFromEnd(page: Page): Promise<number> {
  return page
    .locator(".messages")
    .evaluate((element) => element.scrollHeight - element.scrollTop - element.clientHeight);
}

/**
 * The last message's bottom against what is in view: the scroller's visible bottom and the top of the message box
 * (negative or zero: in view).
 */
async function lastMessageOverhang(page: Page): Promise<{ belowScroller: number; belowComposerTop: number }> {
  return page.evaluate(() => {
    const last = [...document.querySelectorAll(".message")].at(-1)!.getBoundingClientRect();
    const scroller = document.querySelector(".messages")!.getBoundingClientRect();
    const composer = document.querySelector(".composer-box")!.getBoundingClientRect();
    return {
      belowScroller: Math.round(last.bottom - scroller.bottom),
      belowComposerTop: Math.round(last.bottom - composer.top),
    };
  });
}

describe("the chat app's message handling in headless Chromium", () => {
  const chat = useChatPage({ name: "chat-ux", poolMax: 3 });

  async function openContext(viewport: { width: number; height: number }): Promise<BrowserContext> {
    const context = await chat.browser.newContext({
      viewport,
      permissions: ["clipboard-read", "clipboard-write"],
    });
    await context.addInitScript(recordPage);
    return context;
  }

  async function openPage(context: BrowserContext): Promise<Page> {
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
        .screenshot({ path: join(e2eOutputDir, `chat-ux-failure-${name}-${width}x${height}.png`) })
        .catch(() => undefined);
      throw error;
    }
  }

  /** Opens the thread list (the drawer on a phone); `close` puts it away again. */
  async function withThreadList(page: Page, body: () => Promise<void>): Promise<void> {
    const menu = page.locator(".topbar button[aria-label='Conversations']");
    const narrow = (await menu.count()) > 0;
    if (narrow) {
      await menu.click();
      await page.waitForFunction(
        () => document.querySelector(".sidebar")?.getBoundingClientRect().left === 0,
      );
    }
    await body();
    if (narrow && (await page.locator(".app[data-drawer='open']").count()) > 0) {
      await page.keyboard.press("Escape");
      await page.locator(".sidebar").waitFor({ state: "hidden" });
    }
  }

  async function newChat(page: Page): Promise<void> {
    const before = page.url();
    const topbarPlus = page.locator(".topbar button[aria-label='New chat']");
    if ((await topbarPlus.count()) > 0) await topbarPlus.click();
    else await page.locator(".sidebar .new-chat").click();
    await page.waitForURL((url) => url.toString() !== before);
    await page.locator(".empty").waitFor();
  }

  /** Waits for the run's approval card, approves, and waits for the final reply and the end of the run. */
  async function approveAndFinish(page: Page): Promise<void> {
    const approve = page.locator('.pai-tool[data-status="needs-approval"] .pai-tool-approve');
    await approve.waitFor({ timeout: 60_000 });
    await approve.click();
    await page
      .locator(".message.assistant .text", { hasText: /Committed fib\.py as [0-9a-f]{7}/ })
      .last()
      .waitFor({ timeout: 60_000 });
    await page.locator(".composer .send").waitFor();
  }

  for (const viewport of VIEWPORTS) {
    describe(`at ${viewport.width}×${viewport.height}`, () => {
      let context: BrowserContext;
      let page: Page;
      let firstThreadUrl: string;

      beforeAll(async () => {
        context = await openContext(viewport);
        page = await openPage(context);
        await page.goto(chat.server.url);
        await page.locator(".composer textarea").waitFor();
      }, 60_000);

      afterAll(async () => {
        await context?.close().catch(() => undefined);
      });

      it(`keeps the final reply in view after Approve (${viewport.approveRuns} runs), focus in the message box, and the caret only while text streams`, async () => {
        await step(page, "approve", async () => {
          const overhangs: Array<{ belowScroller: number; belowComposerTop: number }> = [];
          for (let run = 0; run < viewport.approveRuns; run++) {
            if (run > 0) await newChat(page);
            if (run === 0) {
              // a suggestion sends itself; the text box keeps the focus
              await page.locator(".suggestion", { hasText: "Show me the sandbox at work" }).click();
              expect(await focusedId(page)).toBe("composer-input");
            } else if (run === 1) {
              await page.locator(".composer textarea").fill("Show me the sandbox at work");
              await page.locator(".composer .send").click();
              expect(await focusedId(page)).toBe("composer-input");
            } else {
              await page.locator(".composer textarea").fill("Show me the sandbox at work");
              await page.locator(".composer textarea").press("Enter");
              expect(await focusedId(page)).toBe("composer-input");
            }
            if (run === 0) firstThreadUrl = page.url();
            await approveAndFinish(page);
            overhangs.push(await lastMessageOverhang(page));
          }
          for (const overhang of overhangs) {
            expect(overhang.belowScroller).toBeLessThanOrEqual(1);
            expect(overhang.belowComposerTop).toBeLessThanOrEqual(1);
          }
          expect(await focusedId(page)).toBe("composer-input");
          const record = await recordOf(page);
          expect(record.caretWhileToolRuns).toBe(0);
          expect(record.caretWhileIdle).toBe(0);
          expect(await page.locator(".markdown > div[style*='--streamdown-caret']").count()).toBe(0);
          await page.screenshot({
            path: join(e2eOutputDir, `chat-ux-approved-${viewport.width}x${viewport.height}.png`),
          });
        });
      }, 300_000);

      it("shows Jump to latest once the reader scrolls up, and it scrolls to the end", async () => {
        await step(page, "jump", async () => {
          expect(await page.locator(".jump-to-latest").count()).toBe(0);
          await page.locator(".messages").hover();
          await page.mouse.wheel(0, -600);
          await page.locator(".jump-to-latest").waitFor();
          expect(await distanceFromEnd(page)).toBeGreaterThan(100);
          const jump = await page.locator(".jump-to-latest").boundingBox();
          expect(jump!.height).toBeGreaterThanOrEqual(44);
          await page.locator(".jump-to-latest").click();
          await expect.poll(() => distanceFromEnd(page)).toBeLessThanOrEqual(1);
          await page.locator(".jump-to-latest").waitFor({ state: "detached" });
        });
      }, 60_000);

      it("copies a message's text to the clipboard and says Copied", async () => {
        await step(page, "copy", async () => {
          const reply = page.locator(".message.assistant").last();
          const copy = reply.locator(".message-action[data-action='copy']");
          await copy.click();
          await reply.locator(".message-action", { hasText: "Copied" }).waitFor();
          const copied = await page.evaluate(() => navigator.clipboard.readText());
          // the reply's own markdown, as the model wrote it
          expect(copied).toMatch(
            /Committed fib\.py as [0-9a-f]{7}\. That is the end of the \*\*scripted plan\*\*/,
          );
          const question = page
            .locator(".message.user")
            .last()
            .locator(".message-action[data-action='copy']");
          await question.click();
          expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(
            "Show me the sandbox at work",
          );
        });
      }, 60_000);

      it("brings a continued old chat's new cards into view, and marks it once an approval is denied", async () => {
        await step(page, "continue", async () => {
          await page.goto(firstThreadUrl);
          await page.locator(".message.assistant .text", { hasText: /Committed fib\.py as/ }).waitFor();
          await expect.poll(() => distanceFromEnd(page)).toBeLessThanOrEqual(1);
          await page.locator(".composer textarea").fill("Again, but I will say no");
          await page.locator(".composer textarea").press("Enter");
          const deny = page.locator('.pai-tool[data-status="needs-approval"] .pai-tool-deny');
          await deny.waitFor({ timeout: 60_000 });
          // the new card is in view: no scrolling needed to answer it
          const box = await deny.boundingBox();
          const scroller = await page.locator(".messages").boundingBox();
          expect(box!.y + box!.height).toBeLessThanOrEqual(scroller!.y + scroller!.height + 1);
          await deny.click();
          await page.locator(".message.assistant .text", { hasText: "You denied the commit" }).waitFor();
          await page.locator(".composer .send").waitFor();
          expect((await lastMessageOverhang(page)).belowScroller).toBeLessThanOrEqual(1);
          const threadId = decodeURIComponent(firstThreadUrl.split("#/threads/")[1]!);
          await withThreadList(page, async () => {
            await page
              .locator(`.sidebar .thread[data-thread-id="${threadId}"][data-denied="true"]`, {
                hasText: "Denied",
              })
              .waitFor();
          });
        });
      }, 120_000);

      it("marks a stopped chat in the thread list", async () => {
        await step(page, "stopped", async () => {
          await newChat(page);
          await page.locator(".composer textarea").fill("Start something, then I stop it");
          await page.locator(".composer textarea").press("Enter");
          await page
            .locator('.pai-tool[data-tool-id="runScript"][data-status="running"] .pai-tool-data pre', {
              hasText: "fib(1) = 1",
            })
            .waitFor({ timeout: 60_000 });
          await page.locator(".composer .stop").click();
          await page.locator('.pai-tool[data-tool-id="runScript"][data-status="stopped"]').waitFor();
          const threadId = decodeURIComponent(page.url().split("#/threads/")[1]!);
          await withThreadList(page, async () => {
            await page
              .locator(`.sidebar .thread[data-thread-id="${threadId}"][data-stopped="true"]`, {
                hasText: "Stopped",
              })
              .waitFor();
          });
        });
      }, 120_000);

      it("says each card's state once: the badge, never again in the card's body", async () => {
        await step(page, "cards", async () => {
          for (const url of [firstThreadUrl, page.url()]) {
            await page.goto(url);
            await page.locator(".pai-tool").first().waitFor();
            const repeats = await page.locator(".pai-tool").evaluateAll((cards) =>
              cards.flatMap((card) => {
                const badge = (card.querySelector(".pai-tool-status")?.textContent ?? "")
                  .trim()
                  .toLowerCase();
                // a line of the body that says the badge again ("Approved", "Stopped before it finished.")
                const lines = [...card.querySelectorAll("p, span, footer, div")]
                  .filter((element) => !element.closest(".pai-tool-header") && element.children.length === 0)
                  .map((element) => (element.textContent ?? "").trim())
                  .filter((text) => {
                    const lower = text.toLowerCase();
                    return lower === badge || lower.startsWith(`${badge}:`) || lower.startsWith(`${badge} `);
                  });
                return badge && lines.length > 0
                  ? [`${card.getAttribute("data-tool-id")}: ${lines.join(" | ")}`]
                  : [];
              }),
            );
            expect(repeats).toEqual([]);
          }
        });
      }, 60_000);

      it("renames and deletes chats from the thread list", async () => {
        await step(page, "rename", async () => {
          const threadId = decodeURIComponent(firstThreadUrl.split("#/threads/")[1]!);
          const row = page.locator(`.sidebar .thread-row[data-thread-id="${threadId}"]`);
          await withThreadList(page, async () => {
            await row.locator(".thread-action[aria-label^='Rename']").click();
            const field = row.locator("input[name='title']");
            await field.fill("Fibonacci, committed");
            await field.press("Enter");
            await row.locator(".thread-title", { hasText: "Fibonacci, committed" }).waitFor();
          });
          const listed = async () =>
            (await (await fetch(`${chat.server.url}/api/threads`)).json()) as {
              threads: Array<{ id: string; title?: string }>;
            };
          expect((await listed()).threads.find((thread) => thread.id === threadId)?.title).toBe(
            "Fibonacci, committed",
          );

          // the open chat (the stopped one) is deleted: it leaves the list and a new chat opens
          const openId = decodeURIComponent(page.url().split("#/threads/")[1]!);
          const count = (await listed()).threads.length;
          await withThreadList(page, async () => {
            const open = page.locator(`.sidebar .thread-row[data-thread-id="${openId}"]`);
            await open.locator(".thread-action[aria-label^='Delete']").click();
            await open.locator(".thread-action.danger", { hasText: "Delete" }).click();
            await open.waitFor({ state: "detached" });
          });
          await page.locator(".empty").waitFor();
          expect(page.url()).not.toContain(openId);
          const after = await listed();
          expect(after.threads.map((thread) => thread.id)).not.toContain(openId);
          expect(after.threads).toHaveLength(count - 1);
        });
      }, 60_000);

      it("never scrolls the page for a visually hidden heading", async () => {
        await step(page, "hidden-headings", async () => {
          await page.goto(firstThreadUrl);
          await page.locator(".message h2.sr-only").first().waitFor({ state: "attached" });
          const moved = await page.evaluate(() => {
            const root = document.scrollingElement!;
            const main = document.querySelector(".main")!;
            const before = main.getBoundingClientRect().top;
            const found: string[] = [];
            for (const heading of document.querySelectorAll<HTMLElement>("h2.sr-only, .sr-only")) {
              heading.scrollIntoView();
              if (root.scrollTop !== 0 || main.scrollTop !== 0 || main.getBoundingClientRect().top !== before)
                found.push(heading.textContent ?? "");
            }
            return {
              found,
              overflow: root.scrollHeight - root.clientHeight,
              mainOverflow: main.scrollHeight - main.clientHeight,
            };
          });
          expect(moved).toEqual({ found: [], overflow: 0, mainOverflow: 0 });
        });
      }, 60_000);

      if (viewport.name === "phone") {
        it("gives every button, link and list item a touch target of 44 px or more", async () => {
          await step(page, "touch", async () => {
            await page.goto(firstThreadUrl);
            await page.locator(".message.assistant .text", { hasText: /You denied the commit/ }).waitFor();
            await page.locator(".markdown [data-streamdown='code-block']").first().waitFor();
            const small = async () =>
              page.evaluate(() =>
                [
                  ...document.querySelectorAll<HTMLElement>(
                    "button, a[href], summary, input, textarea, [role='button'], .threads li",
                  ),
                ].flatMap((element) => {
                  // a link inside a sentence is the sentence's size (WCAG 2.5.5's inline exception)
                  if (element.matches(".markdown p a, .markdown li a")) return [];
                  const box = element.getBoundingClientRect();
                  const style = getComputedStyle(element);
                  if (box.width === 0 || style.visibility === "hidden" || element.closest("[inert]"))
                    return [];
                  return box.width >= 44 && box.height >= 44
                    ? []
                    : [
                        `${element.tagName.toLowerCase()}.${element.className} "${(element.textContent ?? "").trim().slice(0, 30)}" ${Math.round(box.width)}×${Math.round(box.height)}`,
                      ];
                }),
              );
            expect(await small()).toEqual([]);
            await withThreadList(page, async () => {
              expect(await small()).toEqual([]);
            });
          });
        }, 60_000);
      }
    });
  }

  it("shows no raw markdown while the renderer loads", async () => {
    const context = await openContext({ width: 1280, height: 800 });
    try {
      const page = await openPage(context);
      // the renderer's chunk arrives late: until then the text shows without its syntax
      await page.route(/\/assets\/markdown-[^/]+\.js$/, async (route) => {
        await new Promise((resolve) => setTimeout(resolve, 1500));
        await route.continue();
      });
      await step(page, "markdown-flash", async () => {
        const threads = (await (await fetch(`${chat.server.url}/api/threads`)).json()) as {
          threads: Array<{ id: string }>;
        };
        await page.goto(`${chat.server.url}/#/threads/${encodeURIComponent(threads.threads.at(-1)!.id)}`);
        await page.locator(".message.assistant .markdown .plain").first().waitFor();
        await page
          .locator(".message.assistant [data-streamdown='strong']")
          .first()
          .waitFor({ timeout: 30_000 });
        const { texts } = await recordOf(page);
        expect(texts.length).toBeGreaterThan(0);
        expect(texts.filter((text) => /\*\*|```|^#/m.test(text))).toEqual([]);
      });
    } finally {
      await context.close();
    }
  }, 60_000);
});
