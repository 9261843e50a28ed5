import { errors } from "playwright-core";
import { BrowserError } from "./browser-error.ts";
import type { BrowserFacade, JsonValue } from "./browser-facade.ts";
import type { Operate } from "./browser-operations.ts";
import { requireSelector, selectorNotFound } from "./browser-selectors.ts";
import type { ChromiumConnection } from "./connect-chromium.ts";
import { isClosedError, shortMessage } from "./playwright-errors.ts";

/** What the `links` page script uses of the page's globals (it runs in the page; PAI compiles without the DOM lib). */
interface PageGlobals {
  document: { querySelectorAll(selector: string): Iterable<{ textContent: string | null; href: string }> };
}

/** Options of {@link createBrowserPageReads}. */
export interface BrowserPageReadsOptions {
  operate: Operate;
  connection: ChromiumConnection;
  /** Reported by `info()`. */
  image: string;
}

/** `value` as JSON (`undefined` → `null`, a bigint as its digits). */
function toJson(value: unknown): JsonValue {
  if (value === undefined) return null;
  try {
    const text = JSON.stringify(value, (_key, item: unknown) =>
      typeof item === "bigint" ? item.toString() : item,
    );
    return text === undefined ? null : (JSON.parse(text) as JsonValue);
  } catch (error) {
    throw new BrowserError("BROWSER_EVALUATION_FAILED", `the value is not JSON: ${shortMessage(error)}`, {
      cause: error,
    });
  }
}

/** The browser facade's reads of the page: its text, HTML, links, a screenshot, a script's value, and `info`. */
export function createBrowserPageReads(
  options: BrowserPageReadsOptions,
): Pick<BrowserFacade, "text" | "html" | "screenshot" | "evaluate" | "links" | "info"> {
  const { operate, connection } = options;
  return {
    async text(selector, textOptions) {
      const maxChars = textOptions?.maxChars ?? 100_000;
      const target = selector === undefined ? "body" : requireSelector("text", selector);
      return operate(
        "text",
        textOptions,
        async (active, timeout) => {
          // The rendered text (what a reader sees: hidden elements left out, block breaks kept), not textContent.
          // biome-ignore lint/performance/useDomNodeTextContent: Playwright's Locator.innerText, on purpose
          const text = await active.locator(target).first().innerText({ timeout });
          return text.length > maxChars ? text.slice(0, maxChars) : text;
        },
        { mapError: selectorNotFound(target) },
      );
    },

    html(callOptions) {
      return operate("html", callOptions, (active) => active.content());
    },

    screenshot(screenshotOptions) {
      return operate("screenshot", screenshotOptions, async (active, timeout) => {
        const buffer = await active.screenshot({
          type: "png",
          fullPage: screenshotOptions?.fullPage ?? false,
          timeout,
        });
        return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
      });
    },

    async evaluate(expression, callOptions) {
      if (typeof expression !== "string" || expression.trim() === "") {
        throw new BrowserError("INVALID_ARGUMENT", "evaluate: expression must be a non-empty string");
      }
      return operate("evaluate", callOptions, async (active) => toJson(await active.evaluate(expression)), {
        mapError: async (error) =>
          error instanceof errors.TimeoutError || isClosedError(error)
            ? undefined
            : new BrowserError("BROWSER_EVALUATION_FAILED", `evaluate: ${shortMessage(error)}`, {
                cause: error,
              }),
      });
    },

    links(linksOptions) {
      const limit = linksOptions?.limit ?? 500;
      return operate("links", linksOptions, (active) =>
        active.evaluate(
          (max) =>
            Array.from((globalThis as unknown as PageGlobals).document.querySelectorAll("a[href]"))
              .slice(0, max)
              .map((anchor) => ({
                text: (anchor.textContent ?? "").replace(/\s+/g, " ").trim(),
                href: anchor.href,
              })),
          limit,
        ),
      );
    },

    info(callOptions) {
      return operate("info", callOptions, async (active) => ({
        containerId: connection.containerId,
        image: options.image,
        browserVersion: connection.version,
        url: active.url(),
        title: await active.title(),
      }));
    },
  };
}
