export type { ImageProgress, ImageRecipe } from "@pai/pool";
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
export {
  browserImage,
  LATEST_BROWSER_IMAGE,
  resolveDefaultBrowserImage,
} from "./browser-image.ts";
export { chromiumCommand } from "./chromium-command.ts";
export {
  type BrowserConnectionEvent,
  type DockerBrowserBinding,
  type DockerBrowserOptions,
  dockerBrowser,
  type ProvisionedBrowser,
} from "./docker-browser.ts";
