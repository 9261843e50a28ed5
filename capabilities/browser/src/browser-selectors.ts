import { errors, type Page } from "playwright-core";
import { BrowserError } from "./browser-error.ts";

/** `selector`, checked: a non-empty string. */
export function requireSelector(name: string, selector: unknown): string {
  if (typeof selector !== "string" || selector.trim() === "") {
    throw new BrowserError("INVALID_ARGUMENT", `${name}: selector must be a non-empty string`);
  }
  return selector;
}

/** An operation's `mapError`: `NOT_FOUND` when it timed out with nothing matching `selector`. */
export function selectorNotFound(selector: string) {
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
