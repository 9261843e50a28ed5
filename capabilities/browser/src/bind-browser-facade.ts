import type { BrowserCallOptions, BrowserFacade } from "./browser-facade.ts";

function withSignal<OPTIONS extends BrowserCallOptions>(
  options: OPTIONS | undefined,
  signal: AbortSignal,
): OPTIONS {
  const own = options?.signal;
  return { ...(options ?? ({} as OPTIONS)), signal: own ? AbortSignal.any([own, signal]) : signal };
}

/**
 * A view of `facade` whose every operation is also aborted by `signal` (a run's Stop), on top of the signal the
 * caller passes. The provisioned browser's `bind({ signal })` returns it.
 */
export function bindBrowserFacade(facade: BrowserFacade, signal: AbortSignal): BrowserFacade {
  return {
    goto: (url, options) => facade.goto(url, withSignal(options, signal)),
    text: (selector, options) => facade.text(selector, withSignal(options, signal)),
    html: (options) => facade.html(withSignal(options, signal)),
    click: (selector, options) => facade.click(selector, withSignal(options, signal)),
    fill: (selector, value, options) => facade.fill(selector, value, withSignal(options, signal)),
    press: (selector, key, options) => facade.press(selector, key, withSignal(options, signal)),
    screenshot: (options) => facade.screenshot(withSignal(options, signal)),
    evaluate: (expression, options) => facade.evaluate(expression, withSignal(options, signal)),
    links: (options) => facade.links(withSignal(options, signal)),
    info: (options) => facade.info(withSignal(options, signal)),
  };
}
