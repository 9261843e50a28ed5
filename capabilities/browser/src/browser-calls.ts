import type { FacadeCalls } from "@pai/docker-binding";
import type { BrowserFacade } from "./browser-facade.ts";

/** The browser facade's members as a run's view reaches them (see `bindFacade`): which argument takes the run's signal. */
export const browserCalls: FacadeCalls<BrowserFacade> = {
  goto: { options: 1 },
  text: { options: 1 },
  html: { options: 0 },
  click: { options: 1 },
  fill: { options: 2 },
  press: { options: 2 },
  screenshot: { options: 0 },
  evaluate: { options: 1 },
  links: { options: 0 },
  info: { options: 0 },
};
