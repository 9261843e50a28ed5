import { fileURLToPath } from "node:url";
import {
  type ImageRecipe,
  imageUnavailable,
  type ResolveDefaultImageOptions,
  resolveDefaultImage,
} from "@pai/pool";
import { BrowserError } from "./browser-error.ts";

/**
 * The browser image PAI provides: the build context in this package's `image/` folder (Debian bookworm with
 * Chromium and fonts-liberation; user 1000). `dockerBrowser()` builds it on an engine that lacks it;
 * `npx pai images build browser` builds it ahead of time.
 */
export const browserImage: ImageRecipe = {
  name: "browser",
  contextDirectory: fileURLToPath(new URL("../image/", import.meta.url)),
};

/** The tag every build of the browser image moves to the newest one. */
export const LATEST_BROWSER_IMAGE = "pai/browser:latest";

/**
 * The image `dockerBrowser()` runs when none is given, built or not: `pai/browser:<12 hex>`, a hash of
 * {@link browserImage}'s context and its base as the engine has it now (nothing is pulled), so a changed Dockerfile
 * or base is noticed. {@link LATEST_BROWSER_IMAGE} for a driver that cannot tell (no `images`).
 */
export function resolveDefaultBrowserImage(options: ResolveDefaultImageOptions = {}): Promise<string> {
  return resolveDefaultImage(browserImage, LATEST_BROWSER_IMAGE, options);
}

/** An error of the binding's image as the `BrowserError` that says what to do; other errors pass through. */
export function browserImageError(error: unknown): unknown {
  const unavailable = imageUnavailable(error, browserImage);
  return unavailable
    ? new BrowserError("IMAGE_UNAVAILABLE", unavailable.message, {
        cause: error,
        details: unavailable.details,
      })
    : error;
}
