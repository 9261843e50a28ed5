/** Options every browser operation takes. */
export interface BrowserCallOptions {
  /** Stops the operation; it rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Deadline of the operation; past it the operation rejects with a `BrowserError` `BROWSER_TIMEOUT`.
   * @default the binding's `timeoutMs` (30000)
   */
  timeoutMs?: number;
}

/** When `goto` counts a navigation as done (Playwright's `waitUntil`). */
export type BrowserWaitUntil = "commit" | "domcontentloaded" | "load" | "networkidle";

/** Options of `goto`. */
export interface GotoOptions extends BrowserCallOptions {
  /** @default "load" */
  waitUntil?: BrowserWaitUntil;
}

/** Where a navigation ended. An HTTP error status is a value here, not a throw. */
export interface GotoResult {
  /** The page's URL after redirects. */
  url: string;
  title: string;
  /** HTTP status of the main document; `null` when there was none (`about:blank`, same-document navigation). */
  status: number | null;
}

/** Options of `text`. */
export interface TextOptions extends BrowserCallOptions {
  /**
   * Longest text returned, in characters (the start is kept).
   * @default 100000
   */
  maxChars?: number;
}

/** Options of `screenshot`. */
export interface ScreenshotOptions extends BrowserCallOptions {
  /** The whole scrollable page instead of the viewport. @default false */
  fullPage?: boolean;
}

/** Options of `links`. */
export interface LinksOptions extends BrowserCallOptions {
  /** Most links returned, in document order. @default 500 */
  limit?: number;
}

/** One `<a href>` of the page. */
export interface BrowserLink {
  /** The link's visible text, whitespace collapsed. */
  text: string;
  /** The absolute URL. */
  href: string;
}

/** A JSON value, as `evaluate` returns it. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** What `info()` reports. */
export interface BrowserInfo {
  /** The container the browser runs in. */
  containerId: string;
  image: string;
  /** Chromium's version, e.g. `156.0.8078.114`. */
  browserVersion: string;
  /** The current page. */
  url: string;
  title: string;
}

/**
 * What tools see at `ctx.capabilities.browser`: one headless Chromium (one page) per user. Operations run one at
 * a time in call order; each honours its `signal` and has a deadline (`timeoutMs`). Failures are `BrowserError`s
 * (`BrowserError.isInstance(e)` holds) with a `code`: `INVALID_ARGUMENT` (bad URL or selector), `NOT_FOUND` (no element
 * matched the selector in time), `BROWSER_TIMEOUT`, `BROWSER_NAVIGATION_FAILED` (DNS, refused connection...),
 * `BROWSER_EVALUATION_FAILED` (the page script threw) or `CAPABILITY_UNAVAILABLE` (the browser is gone).
 */
export interface BrowserFacade {
  /**
   * Opens `url` (`http:`, `https:` or `about:blank`; other schemes are refused) in the page.
   * @example const { title, status } = await browser.goto("https://example.com", { signal: ctx.signal });
   */
  goto(url: string, options?: GotoOptions): Promise<GotoResult>;
  /** The visible text (`innerText`) of the element `selector` picks (the first match), or of the whole page. */
  text(selector?: string, options?: TextOptions): Promise<string>;
  /** The page's current HTML (the serialized DOM). */
  html(options?: BrowserCallOptions): Promise<string>;
  /** Clicks the first element `selector` matches, after waiting for it to be visible, stable and enabled. */
  click(selector: string, options?: BrowserCallOptions): Promise<void>;
  /** Fills the input, textarea or contenteditable `selector` picks with `value`. */
  fill(selector: string, value: string, options?: BrowserCallOptions): Promise<void>;
  /** Presses `key` (`Enter`, `Tab`, `Control+A`, ...) with the focus on `selector`. */
  press(selector: string, key: string, options?: BrowserCallOptions): Promise<void>;
  /** A PNG of the viewport (or the whole page). */
  screenshot(options?: ScreenshotOptions): Promise<Uint8Array>;
  /**
   * Evaluates a JavaScript expression in the page (a returned promise is awaited) and returns its value as JSON
   * (`undefined` → `null`; what JSON cannot hold is dropped as `JSON.stringify` drops it).
   * @example const count = await browser.evaluate("document.querySelectorAll('li').length");
   */
  evaluate(expression: string, options?: BrowserCallOptions): Promise<JsonValue>;
  /** The page's links (`a[href]`), absolute, in document order. */
  links(options?: LinksOptions): Promise<BrowserLink[]>;
  /** Which browser this is and where its page is. */
  info(options?: BrowserCallOptions): Promise<BrowserInfo>;
}
