import { errors, type Page, type Response } from "playwright-core";
import { BrowserError } from "./browser-error.ts";
import type {
  BrowserCallOptions,
  BrowserFacade,
  BrowserInfo,
  BrowserLink,
  GotoOptions,
  GotoResult,
  JsonValue,
  LinksOptions,
  ScreenshotOptions,
  TextOptions,
} from "./browser-facade.ts";
import type { ChromiumConnection } from "./connect-chromium.ts";

/** What the `links` page script uses of the page's globals (it runs in the page; PAI compiles without the DOM lib). */
interface PageGlobals {
  document: { querySelectorAll(selector: string): Iterable<{ textContent: string | null; href: string }> };
}

/** Options of {@link createBrowserFacade}. */
export interface BrowserFacadeOptions {
  connection: ChromiumConnection;
  /** Reported by `info()`. */
  image: string;
  /** Deadline of an operation that sets none. @default 30000 */
  timeoutMs?: number;
  /**
   * Decides which URLs `goto` may open (after the scheme check: only `http:`, `https:` and `about:blank`).
   * A refused URL is a `BrowserError` `INVALID_ARGUMENT`. It sees the navigation's URL only, not redirects or
   * sub-resources.
   * @default every http(s) URL
   */
  allowUrl?: (url: URL) => boolean;
  /** The egress proxy's latest refusal of a `host:port`, to explain a navigation it refused. */
  refusalFor?: (target: string) => string | undefined;
}

const waitUntilValues = new Set(["commit", "domcontentloaded", "load", "networkidle"]);
/** How long the queue waits for an aborted operation's remains to settle before the next operation starts. */
const ABORT_GRACE_MS = 2_000;
const noop = () => undefined;

/** Extra time the host waits past the Playwright timeout before giving up on a silent connection. */
const BACKSTOP_MS = 2_000;

function isClosedError(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return /Target (page, context or browser )?(has been )?closed|Browser has been closed|browser has disconnected|Connection closed/i.test(
    message,
  );
}

function isSelectorError(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return /Unexpected token|is not a valid selector|Unknown engine|Failed to parse selector/i.test(message);
}

function short(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split("\n")[0]?.slice(0, 300) ?? "";
}

function toJson(value: unknown): JsonValue {
  if (value === undefined) return null;
  try {
    const text = JSON.stringify(value, (_key, item: unknown) =>
      typeof item === "bigint" ? item.toString() : item,
    );
    return text === undefined ? null : (JSON.parse(text) as JsonValue);
  } catch (error) {
    throw new BrowserError("BROWSER_EVALUATION_FAILED", `the value is not JSON: ${short(error)}`, {
      cause: error,
    });
  }
}

/**
 * The {@link BrowserFacade} over a connected Chromium: one page (reopened if the site closes it), operations
 * queued one at a time in call order. A queued operation whose signal aborts leaves the queue at once; a running
 * one rejects at once with the signal's reason while Playwright's own timeout bounds what it leaves behind.
 */
export function createBrowserFacade(options: BrowserFacadeOptions): BrowserFacade {
  const { connection } = options;
  const defaultTimeoutMs = options.timeoutMs ?? 30_000;
  let page: Page | undefined;
  let tail: Promise<void> = Promise.resolve();
  /** The main frame's latest document response, for a navigation Chromium restarted under `goto`. */
  let lastDocument: Response | undefined;

  async function currentPage(): Promise<Page> {
    if (page && !page.isClosed()) return page;
    const context = connection.browser.contexts()[0] ?? (await connection.browser.newContext());
    const opened = context.pages().find((candidate) => !candidate.isClosed()) ?? (await context.newPage());
    opened.on("response", (response) => {
      if (response.request().isNavigationRequest() && response.frame() === opened.mainFrame()) {
        lastDocument = response;
      }
    });
    page = opened;
    return opened;
  }

  function unavailable(cause?: unknown): BrowserError {
    return new BrowserError("CAPABILITY_UNAVAILABLE", "the browser is no longer connected", {
      ...(cause !== undefined ? { cause } : {}),
      details: { containerId: connection.containerId },
    });
  }

  /** Runs one operation in turn, under its signal and deadline, mapping Playwright's errors to BrowserErrors. */
  function operate<T>(
    name: string,
    callOptions: BrowserCallOptions | undefined,
    body: (page: Page, timeoutMs: number) => Promise<T>,
    mapError?: (error: unknown, page: Page | undefined) => Promise<BrowserError | undefined>,
    onAbort?: (page: Page) => Promise<void>,
  ): Promise<T> {
    const signal = callOptions?.signal;
    const timeoutMs = callOptions?.timeoutMs ?? defaultTimeoutMs;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
      return Promise.reject(
        new BrowserError("INVALID_ARGUMENT", `${name}: timeoutMs must be a positive number`),
      );
    }
    if (signal?.aborted) return Promise.reject(signal.reason);
    const deadline = Date.now() + timeoutMs;
    const previous = tail;
    let settle!: () => void;
    const slot = new Promise<void>((resolve) => {
      settle = resolve;
    });
    // The next operation starts once this one is done (or aborted while running) and every earlier one is done.
    tail = Promise.all([previous, slot]).then(() => undefined);

    return new Promise<T>((resolve, reject) => {
      let done = false;
      let running: Promise<unknown> | undefined;
      const finish = (outcome: () => void, releaseQueue = true) => {
        if (done) return;
        done = true;
        clearTimeout(backstop);
        signal?.removeEventListener("abort", abortListener);
        if (releaseQueue) settle();
        outcome();
      };
      const abortListener = () => {
        const body = running;
        finish(() => reject(signal?.reason), body === undefined);
        if (body === undefined) return;
        // Stop what the aborted operation started (a navigation), and let the next operation wait until it has
        // settled, for at most ABORT_GRACE_MS, so it does not trip over its remains.
        if (active && onAbort) onAbort(active).catch(() => undefined);
        const grace = new Promise<void>((resolve) => setTimeout(resolve, ABORT_GRACE_MS).unref());
        void Promise.race([body.then(noop, noop), grace]).then(settle);
      };
      signal?.addEventListener("abort", abortListener, { once: true });
      const backstop = setTimeout(
        () =>
          finish(() =>
            reject(new BrowserError("BROWSER_TIMEOUT", `${name} timed out after ${timeoutMs} ms`)),
          ),
        timeoutMs + BACKSTOP_MS,
      );

      let active: Page | undefined;
      void (async () => {
        await previous;
        if (done) return;
        const remaining = deadline - Date.now();
        if (remaining <= 0) throw new errors.TimeoutError(`${name}: timed out while queued`);
        if (!connection.isConnected()) throw unavailable();
        const work = (async () => {
          active = await currentPage();
          return body(active, remaining);
        })();
        running = work;
        return work;
      })().then(
        (value) => finish(() => resolve(value as T)),
        async (error: unknown) => {
          if (done) return;
          let mapped: unknown = error;
          if (!BrowserError.isInstance(error)) {
            mapped =
              (await mapError?.(error, active).catch(() => undefined)) ??
              (!connection.isConnected() || isClosedError(error)
                ? unavailable(error)
                : error instanceof errors.TimeoutError
                  ? new BrowserError("BROWSER_TIMEOUT", `${name} timed out after ${timeoutMs} ms`, {
                      cause: error,
                    })
                  : isSelectorError(error)
                    ? new BrowserError("INVALID_ARGUMENT", `${name}: ${short(error)}`, { cause: error })
                    : new BrowserError("CAPABILITY_UNAVAILABLE", `${name} failed: ${short(error)}`, {
                        cause: error,
                      }));
          }
          finish(() => reject(mapped));
        },
      );
    });
  }

  /** NOT_FOUND when a selector operation timed out with nothing matching. */
  function selectorNotFound(selector: string) {
    return async (error: unknown, active: Page | undefined): Promise<BrowserError | undefined> => {
      if (!(error instanceof errors.TimeoutError) || !active) return undefined;
      const count = await active.locator(selector).count();
      return count === 0
        ? new BrowserError("NOT_FOUND", `no element matches ${JSON.stringify(selector)}`, {
            cause: error,
            details: { selector },
          })
        : undefined;
    };
  }

  function requireSelector(name: string, selector: unknown): string {
    if (typeof selector !== "string" || selector.trim() === "") {
      throw new BrowserError("INVALID_ARGUMENT", `${name}: selector must be a non-empty string`);
    }
    return selector;
  }

  /** A navigation the egress policy refused, with the policy's one-line reason. */
  function refused(url: string, reason: string, cause?: unknown): BrowserError {
    return new BrowserError("BROWSER_NAVIGATION_FAILED", `goto ${url}: ${reason}`, {
      ...(cause !== undefined ? { cause } : {}),
      details: { url, reason: "EGRESS_REFUSED", egress: reason },
    });
  }

  function checkUrl(url: string): string {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new BrowserError("INVALID_ARGUMENT", `goto: not an absolute URL: ${JSON.stringify(url)}`);
    }
    const isBlank = parsed.href === "about:blank";
    if (!isBlank && parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new BrowserError(
        "INVALID_ARGUMENT",
        `goto: only http(s) URLs are allowed, got ${parsed.protocol}`,
      );
    }
    if (!isBlank && options.allowUrl && !options.allowUrl(parsed)) {
      throw new BrowserError("INVALID_ARGUMENT", `goto: ${parsed.origin} is not allowed`, {
        details: { url: parsed.href },
      });
    }
    return parsed.href;
  }

  return {
    async goto(url: string, gotoOptions?: GotoOptions): Promise<GotoResult> {
      const target = checkUrl(url);
      const waitUntil = gotoOptions?.waitUntil ?? "load";
      if (!waitUntilValues.has(waitUntil)) {
        throw new BrowserError("INVALID_ARGUMENT", `goto: unknown waitUntil ${JSON.stringify(waitUntil)}`);
      }
      return operate(
        "goto",
        gotoOptions,
        async (active, timeout) => {
          const deadline = Date.now() + timeout;
          const remaining = () => Math.max(1, deadline - Date.now());
          const navigate = async (attemptsLeft: number): Promise<Response | null> => {
            try {
              return await active.goto(target, { waitUntil, timeout: remaining() });
            } catch (error) {
              const interrupted = /is interrupted by another navigation to "([^"]*)"/.exec(
                error instanceof Error ? error.message : "",
              );
              if (!interrupted || attemptsLeft === 0) throw error;
              // Chromium restarted this very navigation (leaving an error page starts it over): follow it.
              if (interrupted[1] === target) {
                await active.waitForURL(target, { waitUntil, timeout: remaining() });
                if (waitUntil !== "commit")
                  await active.waitForLoadState(waitUntil, { timeout: remaining() });
                return lastDocument?.url() === target ? lastDocument : null;
              }
              // A navigation an earlier one left behind (a failed page's error page) landed: go again.
              return navigate(attemptsLeft - 1);
            }
          };
          const response = await navigate(2);
          // A plain-HTTP request the egress proxy refused comes back as the proxy's own 403 page.
          if (response && (await response.allHeaders())["proxy-status"]?.startsWith("pai;")) {
            throw refused(target, (await response.text()).trim());
          }
          return { url: active.url(), title: await active.title(), status: response?.status() ?? null };
        },
        async (error) => {
          const message = error instanceof Error ? error.message : "";
          const net = /net::(ERR_[A-Z_]+)/.exec(message);
          if (!net) return undefined;
          // An HTTPS (CONNECT) refusal shows only as a failed tunnel: the proxy knows why.
          const url = new URL(target);
          const port = url.port || (url.protocol === "https:" ? "443" : "80");
          const reason = options.refusalFor?.(`${url.hostname}:${port}`);
          if (reason && net[1] === "ERR_TUNNEL_CONNECTION_FAILED") return refused(target, reason, error);
          return new BrowserError("BROWSER_NAVIGATION_FAILED", `goto ${target}: ${net[1]}`, {
            cause: error,
            details: { url: target, reason: net[1] },
          });
        },
        async (active) => {
          const session = await active.context().newCDPSession(active);
          try {
            await session.send("Page.stopLoading");
          } finally {
            await session.detach().catch(noop);
          }
        },
      );
    },

    async text(selector?: string, textOptions?: TextOptions): Promise<string> {
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
        selectorNotFound(target),
      );
    },

    html(callOptions?: BrowserCallOptions): Promise<string> {
      return operate("html", callOptions, (active) => active.content());
    },

    async click(selector: string, callOptions?: BrowserCallOptions): Promise<void> {
      const target = requireSelector("click", selector);
      await operate(
        "click",
        callOptions,
        (active, timeout) => active.locator(target).first().click({ timeout }),
        selectorNotFound(target),
      );
    },

    async fill(selector: string, value: string, callOptions?: BrowserCallOptions): Promise<void> {
      const target = requireSelector("fill", selector);
      if (typeof value !== "string")
        throw new BrowserError("INVALID_ARGUMENT", "fill: value must be a string");
      await operate(
        "fill",
        callOptions,
        (active, timeout) => active.locator(target).first().fill(value, { timeout }),
        selectorNotFound(target),
      );
    },

    async press(selector: string, key: string, callOptions?: BrowserCallOptions): Promise<void> {
      const target = requireSelector("press", selector);
      if (typeof key !== "string" || key === "") {
        throw new BrowserError("INVALID_ARGUMENT", "press: key must be a non-empty string");
      }
      await operate(
        "press",
        callOptions,
        (active, timeout) => active.locator(target).first().press(key, { timeout }),
        async (error, active) =>
          (await selectorNotFound(target)(error, active)) ??
          (/Unknown key/i.test(error instanceof Error ? error.message : "")
            ? new BrowserError("INVALID_ARGUMENT", `press: unknown key ${JSON.stringify(key)}`, {
                cause: error,
              })
            : undefined),
      );
    },

    screenshot(screenshotOptions?: ScreenshotOptions): Promise<Uint8Array> {
      return operate("screenshot", screenshotOptions, async (active, timeout) => {
        const buffer = await active.screenshot({
          type: "png",
          fullPage: screenshotOptions?.fullPage ?? false,
          timeout,
        });
        return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
      });
    },

    async evaluate(expression: string, callOptions?: BrowserCallOptions): Promise<JsonValue> {
      if (typeof expression !== "string" || expression.trim() === "") {
        throw new BrowserError("INVALID_ARGUMENT", "evaluate: expression must be a non-empty string");
      }
      return operate(
        "evaluate",
        callOptions,
        async (active) => toJson(await active.evaluate(expression)),
        async (error) =>
          error instanceof errors.TimeoutError || isClosedError(error)
            ? undefined
            : new BrowserError("BROWSER_EVALUATION_FAILED", `evaluate: ${short(error)}`, { cause: error }),
      );
    },

    links(linksOptions?: LinksOptions): Promise<BrowserLink[]> {
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

    info(callOptions?: BrowserCallOptions): Promise<BrowserInfo> {
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
