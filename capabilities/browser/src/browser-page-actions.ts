import { BrowserError } from "./browser-error.ts";
import type { BrowserFacade } from "./browser-facade.ts";
import type { Operate } from "./browser-operations.ts";
import { requireSelector, selectorNotFound } from "./browser-selectors.ts";

/** The browser facade's actions on the page's elements: `click`, `fill` and `press`. */
export function createBrowserPageActions(operate: Operate): Pick<BrowserFacade, "click" | "fill" | "press"> {
  return {
    async click(selector, callOptions) {
      const target = requireSelector("click", selector);
      await operate(
        "click",
        callOptions,
        (active, timeout) => active.locator(target).first().click({ timeout }),
        { mapError: selectorNotFound(target) },
      );
    },

    async fill(selector, value, callOptions) {
      const target = requireSelector("fill", selector);
      if (typeof value !== "string")
        throw new BrowserError("INVALID_ARGUMENT", "fill: value must be a string");
      await operate(
        "fill",
        callOptions,
        (active, timeout) => active.locator(target).first().fill(value, { timeout }),
        { mapError: selectorNotFound(target) },
      );
    },

    async press(selector, key, callOptions) {
      const target = requireSelector("press", selector);
      if (typeof key !== "string" || key === "") {
        throw new BrowserError("INVALID_ARGUMENT", "press: key must be a non-empty string");
      }
      await operate(
        "press",
        callOptions,
        (active, timeout) => active.locator(target).first().press(key, { timeout }),
        {
          mapError: async (error, active) =>
            (await selectorNotFound(target)(error, active)) ??
            (/Unknown key/i.test(error instanceof Error ? error.message : "")
              ? new BrowserError("INVALID_ARGUMENT", `press: unknown key ${JSON.stringify(key)}`, {
                  cause: error,
                })
              : undefined),
        },
      );
    },
  };
}
