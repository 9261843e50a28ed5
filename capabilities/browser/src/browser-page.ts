import type { Page, Response } from "playwright-core";
import type { ChromiumConnection } from "./connect-chromium.ts";

/** The one page a browser facade drives. */
export interface BrowserPage {
  /** The page, opened again when the site closed it. */
  current(): Promise<Page>;
  /** The main frame's latest document response, for a navigation Chromium restarted under `goto`. */
  lastDocument(): Response | undefined;
}

/** The page of a connected Chromium: its first context's first open page, or a new one. */
export function createBrowserPage(connection: ChromiumConnection): BrowserPage {
  let page: Page | undefined;
  let lastDocument: Response | undefined;
  return {
    async current() {
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
    },
    lastDocument: () => lastDocument,
  };
}
