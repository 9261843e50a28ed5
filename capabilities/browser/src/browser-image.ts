import { fileURLToPath } from "node:url";
import { type ContainerDriver, createDockerDriver, type ImageRecipe, PoolError, planImage } from "@pai/pool";
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
export async function resolveDefaultBrowserImage(
  options: {
    signal?: AbortSignal;
    /** The engine. @default createDockerDriver() (DOCKER_HOST or the default socket) */
    driver?: ContainerDriver;
    /** As `DockerBrowserOptions.baseImage`. */
    baseImage?: string;
  } = {},
): Promise<string> {
  const { images } = options.driver ?? createDockerDriver();
  if (!images) return LATEST_BROWSER_IMAGE;
  const plan = await planImage({
    images,
    recipe: browserImage,
    baseImage: options.baseImage,
    pull: false,
    signal: options.signal,
  });
  return plan.tag;
}

/** An error of the binding's image as the `BrowserError` that says what to do; other errors pass through. */
export function browserImageError(error: unknown): unknown {
  if (PoolError.hasCode(error, "NOT_FOUND") && typeof error.details?.image === "string") {
    const { image, engineId } = error.details;
    return new BrowserError(
      "IMAGE_UNAVAILABLE",
      `Image ${image} is not on engine ${engineId} (a given image is never built or pulled): pull or load it ` +
        `there (docker pull ${image}), or leave out \`image\` and PAI builds its own browser image ` +
        "(ahead of time: npx pai images build browser)",
      { cause: error, details: error.details },
    );
  }
  if (PoolError.hasCode(error, "IMAGE_UNAVAILABLE")) {
    return new BrowserError("IMAGE_UNAVAILABLE", error.message, {
      cause: error,
      details: error.details ?? {},
    });
  }
  return error;
}
