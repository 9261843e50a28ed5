import { fileURLToPath } from "node:url";
import {
  type ContainerDriver,
  createBindingImage,
  createDockerDriver,
  type ImageProgress,
  type ImageRecipe,
  imageUnavailable,
  type ResolveDefaultImageOptions,
  resolveDefaultImage,
} from "@pai/pool";
import { SandboxError } from "./sandbox-error.ts";

/**
 * The sandbox image PAI provides: the build context in this package's `image/` folder (Debian bookworm with bash,
 * coreutils, python3 and pip, IPython with numpy, pandas and matplotlib for code contexts, node, git, curl; user 1000,
 * `/workspace`). `dockerSandbox()` builds it on an engine
 * that lacks it; `npx pai images build sandbox` builds it ahead of time.
 */
export const sandboxImage: ImageRecipe = {
  name: "sandbox",
  contextDirectory: fileURLToPath(new URL("../image/", import.meta.url)),
};

/** The tag every build of the sandbox image moves to the newest one. */
export const LATEST_SANDBOX_IMAGE = "pai/sandbox:latest";

/**
 * The image `dockerSandbox()` runs when none is given, built or not: `pai/sandbox:<12 hex>`, a hash of
 * {@link sandboxImage}'s context and its base as the engine has it now (nothing is pulled), so a changed Dockerfile
 * or base is noticed. {@link LATEST_SANDBOX_IMAGE} for a driver that cannot tell (no `images`).
 */
export function resolveDefaultSandboxImage(options: ResolveDefaultImageOptions = {}): Promise<string> {
  return resolveDefaultImage(sandboxImage, LATEST_SANDBOX_IMAGE, options);
}

/**
 * Makes sure the engine has PAI's sandbox image, building it there when it lacks it, and returns its tag: what
 * `dockerSandbox()` does on its first use, for code that starts containers itself (`createTestSandbox`) or wants
 * the build done ahead of time (an app's start, a CI step).
 * @throws SandboxError `IMAGE_UNAVAILABLE` naming what to do when it cannot be provided
 */
export async function provideSandboxImage(
  options: {
    /** The engine. @default createDockerDriver() (DOCKER_HOST or the default socket) */
    driver?: ContainerDriver;
    /** As `DockerSandboxOptions.baseImage`. */
    baseImage?: string;
    /** As `DockerSandboxOptions.onImageProgress`. @default lines on stderr */
    onImageProgress?: (progress: ImageProgress) => void;
    signal?: AbortSignal;
  } = {},
): Promise<string> {
  const engine = { id: "default", driver: options.driver ?? createDockerDriver() };
  const image = createBindingImage({
    recipe: sandboxImage,
    baseImage: options.baseImage,
    engines: [engine],
    onProgress: options.onImageProgress,
  });
  const signal = options.signal ?? new AbortController().signal;
  try {
    const tag = await image.resolve(signal);
    await image.ensure({ engineId: engine.id, driver: engine.driver, signal });
    return tag;
  } catch (error) {
    throw sandboxImageError(error);
  }
}

/** An error of the binding's image as the `SandboxError` that says what to do; other errors pass through. */
export function sandboxImageError(error: unknown): unknown {
  const unavailable = imageUnavailable(error, sandboxImage);
  return unavailable
    ? new SandboxError("IMAGE_UNAVAILABLE", unavailable.message, {
        cause: error,
        details: unavailable.details,
      })
    : error;
}
