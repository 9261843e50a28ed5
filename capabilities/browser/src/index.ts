export { bindBrowserFacade } from "./bind-browser-facade.ts";
export { browser } from "./browser.ts";
export { BrowserError, type BrowserErrorCode } from "./browser-error.ts";
export type {
  BrowserCallOptions,
  BrowserFacade,
  BrowserInfo,
  BrowserLink,
  BrowserWaitUntil,
  GotoOptions,
  GotoResult,
  JsonValue,
  LinksOptions,
  ScreenshotOptions,
  TextOptions,
} from "./browser-facade.ts";
export { chromiumCommand } from "./chromium-command.ts";
export { LATEST_BROWSER_IMAGE, resolveDefaultBrowserImage } from "./default-browser-image.ts";
export {
  type BrowserConnectionEvent,
  type DockerBrowserBinding,
  type DockerBrowserOptions,
  dockerBrowser,
  type ProvisionedBrowser,
} from "./docker-browser.ts";
