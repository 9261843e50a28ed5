import type { Page, Response } from "playwright-core";
import { BrowserError } from "./browser-error.ts";
import type { BrowserFacade, GotoOptions, GotoResult } from "./browser-facade.ts";
import type { Operate } from "./browser-operations.ts";
import type { BrowserPage } from "./browser-page.ts";

/** Options of {@link createBrowserNavigation}. */
export interface BrowserNavigationOptions {
  operate: Operate;
  page: BrowserPage;
  /** Which URLs `goto` may open, after the scheme check (see `BrowserFacadeOptions.allowUrl`). */
  allowUrl?: ((url: URL) => boolean) | undefined;
  /** The egress proxy's latest refusal of a `host:port`, to explain a navigation it refused. */
  refusalFor?: ((target: string) => string | undefined) | undefined;
}

const waitUntilValues = new Set(["commit", "domcontentloaded", "load", "networkidle"]);

/** A navigation the egress policy refused, with the policy's one-line reason. */
function refused(url: string, reason: string, cause?: unknown): BrowserError {
  return new BrowserError("BROWSER_NAVIGATION_FAILED", `goto ${url}: ${reason}`, {
    ...(cause !== undefined ? { cause } : {}),
    details: { url, reason: "EGRESS_REFUSED", egress: reason },
  });
}

/** Stops the page's loading (an aborted `goto`). */
async function stopLoading(active: Page): Promise<void> {
  const session = await active.context().newCDPSession(active);
  try {
    await session.send("Page.stopLoading");
  } finally {
    await session.detach().catch(() => undefined);
  }
}

/** The browser facade's navigation: `goto`. */
export function createBrowserNavigation(options: BrowserNavigationOptions): Pick<BrowserFacade, "goto"> {
  const { operate, page } = options;

  /** The URL `goto` opens: absolute, http(s) or `about:blank`, and allowed. */
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

  /** Opens `target`, following a navigation Chromium restarted or one an earlier navigation left behind. */
  async function navigate(
    active: Page,
    target: string,
    waitUntil: NonNullable<GotoOptions["waitUntil"]>,
    remaining: () => number,
    attemptsLeft: number,
  ): Promise<Response | null> {
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
        if (waitUntil !== "commit") await active.waitForLoadState(waitUntil, { timeout: remaining() });
        const last = page.lastDocument();
        return last?.url() === target ? last : null;
      }
      // A navigation an earlier one left behind (a failed page's error page) landed: go again.
      return navigate(active, target, waitUntil, remaining, attemptsLeft - 1);
    }
  }

  /** A failed navigation's `BrowserError`: the egress policy's refusal, or Chromium's `net::ERR_*`. */
  async function navigationFailure(target: string, error: unknown): Promise<BrowserError | undefined> {
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
          const response = await navigate(active, target, waitUntil, remaining, 2);
          // A plain-HTTP request the egress proxy refused comes back as the proxy's own 403 page.
          if (response && (await response.allHeaders())["proxy-status"]?.startsWith("pai;")) {
            throw refused(target, (await response.text()).trim());
          }
          return { url: active.url(), title: await active.title(), status: response?.status() ?? null };
        },
        { mapError: (error) => navigationFailure(target, error), onAbort: stopLoading },
      );
    },
  };
}
