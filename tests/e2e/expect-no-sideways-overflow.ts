import type { Page } from "playwright-core";
import { expect } from "vitest";

/**
 * Nothing of the chat page scrolls sideways: not the page, not the conversation, and no message, card, button,
 * preview, the composer or the terminal reaches past the window's right edge (where `overflow-x: hidden` would
 * cut it off unseen).
 */
export async function expectNoSidewaysOverflow(page: Page): Promise<void> {
  const found = await page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const offenders: string[] = [];
    const selectors = [
      ".main",
      ".messages",
      ".message",
      ".pai-tool",
      ".pai-tool button",
      ".preview-bar",
      ".preview-frame",
      ".composer",
      ".composer textarea",
      ".composer button",
      ".topbar",
      ".conversation-head",
      ".terminal-panel",
      ".terminal-panel button",
      ".terminal-screen",
    ];
    for (const element of document.querySelectorAll<HTMLElement>(selectors.join(","))) {
      const rect = element.getBoundingClientRect();
      if (rect.width > 0 && (rect.left < -1 || rect.right > width + 1)) {
        offenders.push(`${element.tagName.toLowerCase()}.${element.className} ${rect.left}..${rect.right}`);
      }
    }
    const messages = document.querySelector<HTMLElement>(".messages");
    return {
      page: document.documentElement.scrollWidth - width,
      conversation: messages ? messages.scrollWidth - messages.clientWidth : 0,
      offenders,
    };
  });
  expect(found).toEqual({ page: 0, conversation: 0, offenders: [] });
}
