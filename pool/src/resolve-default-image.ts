import type { ContainerDriver } from "./container-driver.ts";
import { createDockerDriver } from "./docker-driver.ts";
import type { ImageRecipe } from "./image-context.ts";
import { planImage } from "./plan-image.ts";
import { PoolError } from "./pool-error.ts";

/** Options of {@link resolveDefaultImage}. */
export interface ResolveDefaultImageOptions {
  signal?: AbortSignal;
  /** The engine. @default createDockerDriver() (DOCKER_HOST or the default socket) */
  driver?: ContainerDriver;
  /** The base the recipe builds on (as a binding's `baseImage`). */
  baseImage?: string;
}

/**
 * The image a binding runs when none is given, built or not: `pai/<recipe>:<12 hex>`, a hash of the recipe's context
 * and its base as the engine has it now (nothing is pulled), so a changed Dockerfile or base is noticed. `latestTag`
 * for a driver that cannot tell (no `images`).
 */
export async function resolveDefaultImage(
  recipe: ImageRecipe,
  latestTag: string,
  options: ResolveDefaultImageOptions = {},
): Promise<string> {
  const { images } = options.driver ?? createDockerDriver();
  if (!images) return latestTag;
  const plan = await planImage({
    images,
    recipe,
    baseImage: options.baseImage,
    pull: false,
    signal: options.signal,
  });
  return plan.tag;
}

/**
 * What a binding's user is told when its image cannot be had: for a given image missing on an engine (`NOT_FOUND`
 * with `details.image`), how to get it or to let PAI build its own `recipe`; for `IMAGE_UNAVAILABLE`, the pool's own
 * message. `undefined` for any other error (it passes through).
 */
export function imageUnavailable(
  error: unknown,
  recipe: ImageRecipe,
): { message: string; details: Record<string, unknown> } | undefined {
  if (PoolError.hasCode(error, "NOT_FOUND") && typeof error.details?.image === "string") {
    const { image, engineId } = error.details;
    return {
      message:
        `Image ${image} is not on engine ${engineId} (a given image is never built or pulled): pull or load it ` +
        `there (docker pull ${image}), or leave out \`image\` and PAI builds its own ${recipe.name} image ` +
        `(ahead of time: npx pai images build ${recipe.name})`,
      details: error.details,
    };
  }
  if (PoolError.hasCode(error, "IMAGE_UNAVAILABLE"))
    return { message: error.message, details: error.details ?? {} };
  return undefined;
}
