import { bindFacade } from "@pai/docker-binding";
import { browserCalls } from "./browser-calls.ts";
import type { BrowserFacade } from "./browser-facade.ts";

/**
 * A view of `facade` whose every operation is also aborted by `signal` (a run's Stop), on top of the signal the
 * caller passes. A provisioned browser's `bind({ signal, report })` gives the same view, which also reports the
 * runs' connections and a lost container.
 */
export function bindBrowserFacade(facade: BrowserFacade, signal: AbortSignal): BrowserFacade {
  return bindFacade(facade, { calls: browserCalls, signal });
}
