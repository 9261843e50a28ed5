import { errors, type Page } from "playwright-core";
import { BrowserError } from "./browser-error.ts";
import type { BrowserCallOptions } from "./browser-facade.ts";
import type { BrowserPage } from "./browser-page.ts";
import type { ChromiumConnection } from "./connect-chromium.ts";
import { isClosedError, isSelectorError, shortMessage } from "./playwright-errors.ts";

/** What one operation does on the page, within `timeoutMs` (what is left of its deadline once its turn came). */
export type OperationBody<T> = (page: Page, timeoutMs: number) => Promise<T>;

/** How an operation knows its own failures and stops what it started. */
export interface OperationHandlers {
  /** A better error for a failure this operation knows (a selector that matched nothing), or `undefined`. */
  mapError?: (error: unknown, page: Page | undefined) => Promise<BrowserError | undefined>;
  /** Stops what the operation started on the page when it is aborted while running (a navigation). */
  onAbort?: (page: Page) => Promise<void>;
}

/**
 * Runs one operation in turn, under its signal and deadline, mapping Playwright's errors to `BrowserError`s. A
 * queued operation whose signal aborts leaves the queue at once; a running one rejects at once with the signal's
 * reason while Playwright's own timeout bounds what it leaves behind.
 */
export type Operate = <T>(
  name: string,
  callOptions: BrowserCallOptions | undefined,
  body: OperationBody<T>,
  handlers?: OperationHandlers,
) => Promise<T>;

/** How long the queue waits for an aborted operation's remains to settle before the next operation starts. */
const ABORT_GRACE_MS = 2_000;
/** Extra time the host waits past the Playwright timeout before giving up on a silent connection. */
const BACKSTOP_MS = 2_000;
const noop = () => undefined;

/** Options of {@link createBrowserOperations}. */
export interface BrowserOperationsOptions {
  connection: ChromiumConnection;
  page: BrowserPage;
  /** Deadline of an operation that sets none. */
  defaultTimeoutMs: number;
}

/** The queue of a browser facade's operations: one at a time, in call order (see {@link Operate}). */
export function createBrowserOperations(options: BrowserOperationsOptions): Operate {
  const { connection, page, defaultTimeoutMs } = options;
  let tail: Promise<void> = Promise.resolve();

  function unavailable(cause?: unknown): BrowserError {
    return new BrowserError("CAPABILITY_UNAVAILABLE", "the browser is no longer connected", {
      ...(cause !== undefined ? { cause } : {}),
      details: { containerId: connection.containerId },
    });
  }

  /** The error an operation's failure becomes when the operation itself knows no better one. */
  function failure(name: string, timeoutMs: number, error: unknown): BrowserError {
    if (!connection.isConnected() || isClosedError(error)) return unavailable(error);
    if (error instanceof errors.TimeoutError) {
      return new BrowserError("BROWSER_TIMEOUT", `${name} timed out after ${timeoutMs} ms`, { cause: error });
    }
    if (isSelectorError(error)) {
      return new BrowserError("INVALID_ARGUMENT", `${name}: ${shortMessage(error)}`, { cause: error });
    }
    return new BrowserError("CAPABILITY_UNAVAILABLE", `${name} failed: ${shortMessage(error)}`, {
      cause: error,
    });
  }

  /** Takes the next place in the queue: the operation may start once `previous` is done; `done` frees the place. */
  function enqueue(): { previous: Promise<void>; done(): void } {
    const previous = tail;
    let done!: () => void;
    const slot = new Promise<void>((resolve) => {
      done = resolve;
    });
    // The next operation starts once this one is done (or aborted while running) and every earlier one is done.
    tail = Promise.all([previous, slot]).then(() => undefined);
    return { previous, done };
  }

  return function operate<T>(
    name: string,
    callOptions: BrowserCallOptions | undefined,
    body: OperationBody<T>,
    handlers: OperationHandlers = {},
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
    const place = enqueue();

    return new Promise<T>((resolve, reject) => {
      let done = false;
      let running: Promise<unknown> | undefined;
      let active: Page | undefined;
      const finish = (outcome: () => void, releaseQueue = true) => {
        if (done) return;
        done = true;
        clearTimeout(backstop);
        signal?.removeEventListener("abort", abortListener);
        if (releaseQueue) place.done();
        outcome();
      };
      const abortListener = () => {
        const started = running;
        finish(() => reject(signal?.reason), started === undefined);
        if (started === undefined) return;
        // Stop what the aborted operation started (a navigation), and let the next operation wait until it has
        // settled, for at most ABORT_GRACE_MS, so it does not trip over its remains.
        if (active && handlers.onAbort) handlers.onAbort(active).catch(noop);
        const grace = new Promise<void>((resolveGrace) => setTimeout(resolveGrace, ABORT_GRACE_MS).unref());
        void Promise.race([started.then(noop, noop), grace]).then(place.done);
      };
      signal?.addEventListener("abort", abortListener, { once: true });
      const backstop = setTimeout(
        () =>
          finish(() =>
            reject(new BrowserError("BROWSER_TIMEOUT", `${name} timed out after ${timeoutMs} ms`)),
          ),
        timeoutMs + BACKSTOP_MS,
      );

      void (async () => {
        await place.previous;
        if (done) return;
        const remaining = deadline - Date.now();
        if (remaining <= 0) throw new errors.TimeoutError(`${name}: timed out while queued`);
        if (!connection.isConnected()) throw unavailable();
        const work = (async () => {
          active = await page.current();
          return body(active, remaining);
        })();
        running = work;
        return work;
      })().then(
        (value) => finish(() => resolve(value as T)),
        async (error: unknown) => {
          if (done) return;
          const mapped = BrowserError.isInstance(error)
            ? error
            : ((await handlers.mapError?.(error, active).catch(() => undefined)) ??
              failure(name, timeoutMs, error));
          finish(() => reject(mapped));
        },
      );
    });
  };
}
