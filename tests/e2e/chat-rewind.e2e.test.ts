// End to end: Edit, Regenerate and Fork from here in the chat app (issue 25, item 4) in Debian's headless Chromium,
// at 1280×800 and 390×844, on one in-process chat server (scripted model, real Docker sandbox, checkpoints on disk).
// Needs /usr/bin/chromium (tests/e2e/ensure-chromium), the Docker engine and the pai/sandbox image.
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { e2eOutputDir, useChatPage } from "./chat-page-fixture.ts";
import { expectNoSidewaysOverflow } from "./expect-no-sideways-overflow.ts";

const VIEWPORTS = [
  { width: 1280, height: 800 },
  { width: 390, height: 844 },
] as const;

/** The first message: the scripted model writes fib.py, runs it and asks to commit it. */
const WRITE = "Show me the sandbox at work";
/** The second: the scripted model's cleanup plan deletes fib.py with `rm -v`. */
const DELETE = "Delete fib.py";
/** The first message, edited: the cleanup plan, before fib.py was ever written. */
const EDITED = "Delete fib.py before it is written";
/** What the cleanup plan's command prints when fib.py is there to delete. */
const REMOVED = "removed 'fib.py'";

/** Installed before the page's scripts: counts the moments an Edit, Regenerate or Fork button showed during a run. */
function recordPage(): void {
  const record = { rewindButtonsWhileBusy: 0 };
  (window as unknown as { paiRecord: typeof record }).paiRecord = record;
  const look = () => {
    if (
      document.querySelector('.conversation[data-status="busy"]') &&
      document.querySelector('[data-action="edit"], [data-action="regenerate"], [data-action="fork"]')
    )
      record.rewindButtonsWhileBusy++;
  };
  document.addEventListener("DOMContentLoaded", () =>
    new MutationObserver(look).observe(document.body, {
      subtree: true,
      childList: true,
      attributes: true,
      attributeFilter: ["data-status"],
    }),
  );
}

/** A stored thread's messages as the API reads them: id, role and text. */
interface StoredMessage {
  id: string;
  role: string;
  text: string;
}

describe("Edit, Regenerate and Fork from here in headless Chromium", () => {
  const chat = useChatPage({ name: "chat-rewind", poolMax: 4 });
  /** Error responses a step provokes on purpose (`409 POST /api/chat`), taken off the page's errors once seen. */
  const expectedErrors: string[] = [];

  async function storedMessages(threadId: string): Promise<StoredMessage[]> {
    const response = await fetch(`${chat.server.url}/api/threads/${encodeURIComponent(threadId)}`);
    expect(response.status).toBe(200);
    const { messages } = (await response.json()) as {
      messages: Array<{ id: string; role: string; parts: Array<{ type: string; text?: string }> }>;
    };
    return messages.map((message) => ({
      id: message.id,
      role: message.role,
      text: message.parts.flatMap((part) => (part.type === "text" ? [part.text ?? ""] : [])).join(" "),
    }));
  }

  /** The page's messages: id and role, in order. */
  function shownMessages(page: Page): Promise<Array<{ id: string; role: string }>> {
    return page.locator(".messages .message").evaluateAll((messages) =>
      messages.map((message) => ({
        id: message.dataset.messageId ?? "",
        role: message.dataset.role ?? "",
      })),
    );
  }

  function threadIdOf(page: Page): string {
    return decodeURIComponent(page.url().split("#/threads/")[1]!);
  }

  /** Opens the thread list (the drawer on a phone) for `body`, then puts it away again. */
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

  async function send(page: Page, text: string): Promise<void> {
    await page.locator(".composer textarea").fill(text);
    await page.locator(".composer textarea").press("Enter");
  }

  /** Waits for the run to end: the composer offers Send again. */
  async function idle(page: Page): Promise<void> {
    await page.locator('.conversation[data-status="idle"] .composer .send').waitFor({ timeout: 60_000 });
  }

  /** The cleanup plan's answer: its command's output and its last words, in the last message. */
  function cleanupAnswer(page: Page) {
    const last = page.locator(".messages .message").last();
    return {
      output: last.locator('.pai-tool[data-tool-id="runScript"] .pai-tool-data pre'),
      said: last.locator(".text", { hasText: "the workspace no longer has it" }),
    };
  }

  for (const viewport of VIEWPORTS) {
    it(`at ${viewport.width}×${viewport.height}: regenerates with the file back, forks, edits, and keeps everything when refused`, async () => {
      const context: BrowserContext = await chat.browser.newContext({ viewport });
      const page = await context.newPage();
      const name = `${viewport.width}x${viewport.height}`;
      page.on("pageerror", (error) => chat.pageErrors.push(error.message));
      page.on("console", (message) => {
        if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
          chat.pageErrors.push(message.text());
        }
      });
      page.on("response", (response) => {
        if (response.status() < 400) return;
        const line = `${response.status()} ${response.request().method()} ${new URL(response.url()).pathname}`;
        const expected = expectedErrors.indexOf(line);
        if (expected >= 0) expectedErrors.splice(expected, 1);
        else chat.pageErrors.push(line);
      });
      await context.addInitScript(recordPage);
      try {
        await page.goto(chat.server.url);
        await page.locator(".composer textarea").waitFor();

        // turn 1 writes fib.py (its commit denied), turn 2 deletes it
        await send(page, WRITE);
        const deny = page.locator('.pai-tool[data-status="needs-approval"] .pai-tool-deny');
        await deny.waitFor({ timeout: 60_000 });
        await deny.click();
        await page.locator(".message.assistant .text", { hasText: "You denied the commit" }).waitFor();
        await idle(page);
        await send(page, DELETE);
        await cleanupAnswer(page).said.waitFor({ timeout: 60_000 });
        await idle(page);
        expect(await cleanupAnswer(page).output.textContent()).toContain(REMOVED);
        const threadId = threadIdOf(page);
        const [u1, a1, u2, a2] = await shownMessages(page);
        expect([u1?.role, a1?.role, u2?.role, a2?.role]).toEqual(["user", "assistant", "user", "assistant"]);
        expect((await storedMessages(threadId)).map((message) => message.id)).toEqual(
          [u1, a1, u2, a2].map((message) => message!.id),
        );

        // Edit on each of the user's messages, Fork from here on each answer, Regenerate on the last one only
        const actions = (action: string) =>
          page
            .locator(`.message [data-action="${action}"]`)
            .evaluateAll((buttons) =>
              buttons.map((button) => (button.closest(".message") as HTMLElement).dataset.messageId),
            );
        expect(await actions("edit")).toEqual([u1!.id, u2!.id]);
        expect(await actions("fork")).toEqual([a1!.id, a2!.id]);
        expect(await actions("regenerate")).toEqual([a2!.id]);
        for (const label of ["Edit message", "Fork from here", "Regenerate"]) {
          const box = await page.getByRole("button", { name: label, exact: true }).last().boundingBox();
          // touch targets: 44 px on a phone (a wide window's pointer gets the page's 36 px rows)
          expect(box!.height).toBeGreaterThanOrEqual(viewport.width < 768 ? 44 : 36);
        }

        // Regenerate, from the keyboard: a new answer in place of the old one, and fib.py is back to delete again
        await page.getByRole("button", { name: "Regenerate" }).focus();
        await page.keyboard.press("Enter");
        await page.locator(`.message[data-message-id="${a2!.id}"]`).waitFor({ state: "detached" });
        await cleanupAnswer(page).said.waitFor({ timeout: 60_000 });
        await idle(page);
        expect(await cleanupAnswer(page).output.textContent()).toContain(REMOVED);
        const regenerated = await shownMessages(page);
        expect(regenerated.slice(0, 3)).toEqual([u1, a1, u2]);
        expect(regenerated).toHaveLength(4);
        expect(regenerated[3]!.id).not.toBe(a2!.id);
        const afterRegenerate = await storedMessages(threadId);
        expect(afterRegenerate.map((message) => message.id)).toEqual(
          regenerated.map((message) => message.id),
        );
        await page.screenshot({ path: join(e2eOutputDir, `chat-rewind-regenerated-${name}.png`) });

        // Fork from here on the first answer: a new thread, listed as "(fork)", with the history up to there and
        // the sandbox as it was then (fib.py there to delete); the original untouched
        await page.locator(`.message[data-message-id="${a1!.id}"] [data-action="fork"]`).click();
        await page.waitForURL((url) => !url.hash.includes(encodeURIComponent(threadId)));
        const forkId = threadIdOf(page);
        await page.locator(".message.assistant .text", { hasText: "You denied the commit" }).waitFor();
        expect((await shownMessages(page)).map((message) => message.role)).toEqual(["user", "assistant"]);
        expect((await storedMessages(forkId)).map((message) => message.text)).toEqual(
          afterRegenerate.slice(0, 2).map((message) => message.text),
        );
        await withThreadList(page, async () => {
          await page
            .locator(`.sidebar .thread[data-thread-id="${forkId}"][aria-current="page"]`, {
              hasText: `${WRITE} (fork)`,
            })
            .waitFor();
          await page.locator(`.sidebar .thread[data-thread-id="${threadId}"]`, { hasText: WRITE }).waitFor();
        });
        await send(page, DELETE);
        await cleanupAnswer(page).said.waitFor({ timeout: 60_000 });
        await idle(page);
        expect(await cleanupAnswer(page).output.textContent()).toContain(REMOVED);
        expect(await storedMessages(threadId)).toEqual(afterRegenerate);

        // back to the original: Edit its first message (Escape cancels, Enter saves) into asking for the delete:
        // all that followed goes, and the new answer finds the sandbox as it was before fib.py was written
        await withThreadList(page, async () => {
          await page.locator(`.sidebar .thread[data-thread-id="${threadId}"]`).click();
        });
        await page.waitForURL((url) => url.hash.includes(encodeURIComponent(threadId)));
        await page.locator(`.message[data-message-id="${regenerated[3]!.id}"]`).waitFor();
        const edit = page.locator(`.message[data-message-id="${u1!.id}"] [data-action="edit"]`);
        await edit.click();
        const field = page.getByRole("textbox", { name: "Edit your message" });
        expect(await field.inputValue()).toBe(WRITE);
        expect(await page.evaluate(() => document.activeElement?.id)).toBe(`edit-${u1!.id}`);
        await field.press("Escape");
        await field.waitFor({ state: "detached" });
        expect(await page.evaluate(() => document.activeElement?.getAttribute("data-action"))).toBe("edit");
        expect(await shownMessages(page)).toEqual(regenerated);
        await edit.click();
        if (viewport.width < 768) {
          await expectNoSidewaysOverflow(page);
          for (const label of ["Save", "Cancel"]) {
            const box = await page.getByRole("button", { name: label, exact: true }).boundingBox();
            expect(box!.height).toBeGreaterThanOrEqual(44);
          }
        }
        await field.fill(EDITED);
        await field.press("Enter");
        for (const gone of regenerated.slice(1)) {
          await page.locator(`.message[data-message-id="${gone.id}"]`).waitFor({ state: "detached" });
        }
        await page
          .locator(".message.assistant .text", { hasText: "There was no fib.py to delete" })
          .waitFor({ timeout: 60_000 });
        await idle(page);
        expect(await cleanupAnswer(page).output.textContent()).toContain("cannot remove 'fib.py'");
        const edited = await storedMessages(threadId);
        expect(edited.map((message) => [message.id === u1!.id, message.role])).toEqual([
          [true, "user"],
          [false, "assistant"],
        ]);
        expect(edited[0]!.text).toBe(EDITED);
        expect(await shownMessages(page)).toEqual(edited.map(({ id, role }) => ({ id, role })));

        // refused: while a run started elsewhere goes on, the edit comes back with its text and the reason shows
        const before = await shownMessages(page);
        const elsewhere = await fetch(`${chat.server.url}/api/chat`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            id: threadId,
            messages: [{ id: `elsewhere-${name}`, role: "user", parts: [{ type: "text", text: WRITE }] }],
          }),
        });
        expect(elsewhere.status).toBe(200);
        try {
          await edit.click();
          await field.fill("This one is refused");
          expectedErrors.push("409 POST /api/chat");
          const refusal = page.waitForResponse((response) => response.url().endsWith("/api/chat"));
          await field.press("Enter");
          const refused = await refusal;
          const body = (await refused.json()) as { error: { code: string; message: string } };
          expect([refused.status(), body.error.code]).toEqual([409, "THREAD_BUSY"]);
          const alert = page.locator(`.message[data-message-id="${u1!.id}"] [role="alert"]`);
          await alert.waitFor();
          expect(await alert.textContent()).toBe(body.error.message);
          expect(await field.inputValue()).toBe("This one is refused");
          expect(await shownMessages(page)).toEqual(before);
          await page.screenshot({ path: join(e2eOutputDir, `chat-rewind-refused-${name}.png`) });
          await field.press("Escape");
          expect(await shownMessages(page)).toEqual(before);
        } finally {
          await fetch(`${chat.server.url}/api/chat/${encodeURIComponent(threadId)}/stop`, { method: "POST" });
          await elsewhere.body?.cancel().catch(() => undefined);
        }

        const { rewindButtonsWhileBusy } = await page.evaluate(
          () => (window as unknown as { paiRecord: { rewindButtonsWhileBusy: number } }).paiRecord,
        );
        expect(rewindButtonsWhileBusy).toBe(0);
        expect(expectedErrors).toEqual([]);
        expect(chat.pageErrors).toEqual([]);
      } catch (error) {
        await page
          .screenshot({ path: join(e2eOutputDir, `chat-rewind-failure-${name}.png`) })
          .catch(() => undefined);
        throw error;
      } finally {
        await context.close().catch(() => undefined);
      }
    }, 180_000);
  }
});
