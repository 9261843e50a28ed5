import type { BrowserFacade } from "./browser-facade.ts";
import { createBrowserNavigation } from "./browser-navigation.ts";
import { createBrowserOperations } from "./browser-operations.ts";
import { createBrowserPage } from "./browser-page.ts";
import { createBrowserPageActions } from "./browser-page-actions.ts";
import { createBrowserPageReads } from "./browser-page-reads.ts";
import type { ChromiumConnection } from "./connect-chromium.ts";

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

/**
 * The {@link BrowserFacade} over a connected Chromium: one page (reopened if the site closes it), operations
 * queued one at a time in call order. A queued operation whose signal aborts leaves the queue at once; a running
 * one rejects at once with the signal's reason while Playwright's own timeout bounds what it leaves behind.
 */
export function createBrowserFacade(options: BrowserFacadeOptions): BrowserFacade {
  const { connection } = options;
  const page = createBrowserPage(connection);
  const operate = createBrowserOperations({
    connection,
    page,
    defaultTimeoutMs: options.timeoutMs ?? 30_000,
  });
  return {
    ...createBrowserNavigation({
      operate,
      page,
      allowUrl: options.allowUrl,
      refusalFor: options.refusalFor,
    }),
    ...createBrowserPageReads({ operate, connection, image: options.image }),
    ...createBrowserPageActions(operate),
  };
}
