import { createHash } from "node:crypto";
import { debootstrapBase } from "./debootstrap-base.ts";
import { contextDigestLines, type ImageRecipe, readImageContext } from "./image-context.ts";
import type { ImageDriver } from "./image-driver.ts";
import type { ImageProgress } from "./image-progress.ts";
import { PoolError } from "./pool-error.ts";

/** The registry base of PAI's images when none is set: used when the engine has it or can pull it. */
export const DEFAULT_REGISTRY_BASE = "debian:bookworm-slim";

/** The base an image is built on. */
export interface BaseImage {
  /** What the Dockerfile's `FROM` gets (`BASE_IMAGE`). */
  ref: string;
  /**
   * `given`: set by the caller (or `PAI_BASE_IMAGE`); `registry`: {@link DEFAULT_REGISTRY_BASE}; `debootstrap`:
   * the rootfs PAI makes itself where no registry answers (`pai/base:<hash>`).
   */
  kind: "given" | "registry" | "debootstrap";
  /** What the image's tag hashes: the ref, plus the image id for a registry image (a newer pull is noticed). */
  key: string;
}

/** Which image to provide, and on what base. */
export interface ImagePlan {
  recipe: ImageRecipe;
  /** `pai/<name>:<hash>`. */
  tag: string;
  /** `pai/<name>:latest`. */
  latest: string;
  /** The 12 hex of the tag: a hash of the recipe's name, the base's key and every file of the context. */
  hash: string;
  base: BaseImage;
}

/** Options of {@link planImage}. */
export interface PlanImageOptions {
  /** The engine the plan is made for (the first of a binding's engines: the others get the same image). */
  images: ImageDriver;
  recipe: ImageRecipe;
  /** A base image to build on instead of the default. @default `PAI_BASE_IMAGE` when set */
  baseImage?: string | undefined;
  /**
   * May the plan pull a base the engine lacks: `baseImage`, or {@link DEFAULT_REGISTRY_BASE} when the image must be
   * built. `false` only works the tag out from what the engine has (`pai images build --print-tag`).
   * @default true
   */
  pull?: boolean;
  /** How long a registry may take to start answering a pull of the default base. @default 20000 */
  registryTimeoutMs?: number;
  onProgress?: ((progress: ImageProgress) => void) | undefined;
  signal?: AbortSignal | undefined;
}

function planOf(recipe: ImageRecipe, base: BaseImage, contextLines: string): ImagePlan {
  const hash = createHash("sha256")
    .update(`pai-image v1 ${recipe.name}\nbase ${base.key}\n${contextLines}`)
    .digest("hex")
    .slice(0, 12);
  return { recipe, tag: `pai/${recipe.name}:${hash}`, latest: `pai/${recipe.name}:latest`, hash, base };
}

/**
 * Pulls `ref`, telling each status line as `pull` progress. With `answerWithinMs`, gives up when the registry has
 * not started answering by then (no registry reachable: fall back at once instead of waiting on the network).
 */
export async function pullBase(options: {
  images: ImageDriver;
  ref: string;
  answerWithinMs?: number | undefined;
  onProgress?: ((progress: ImageProgress) => void) | undefined;
  signal?: AbortSignal | undefined;
}): Promise<void> {
  const { images, ref, answerWithinMs, signal } = options;
  const silence = new AbortController();
  const timer =
    answerWithinMs === undefined
      ? undefined
      : setTimeout(
          () =>
            silence.abort(
              new PoolError(
                "IMAGE_UNAVAILABLE",
                `pull ${ref}: no registry answered within ${answerWithinMs} ms`,
              ),
            ),
          answerWithinMs,
        );
  const pullSignal = signal ? AbortSignal.any([signal, silence.signal]) : silence.signal;
  options.onProgress?.({ image: ref, phase: "pull", message: `pulling ${ref}` });
  try {
    await images.pull(ref, {
      signal: pullSignal,
      onStatus: (line) => {
        clearTimeout(timer);
        options.onProgress?.({ image: ref, phase: "pull", message: line });
      },
    });
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Decides the image `provideImage` provides for `recipe` on the engine `images` reaches, and its content-hashed
 * tag. The base, in order:
 *
 * 1. `baseImage` (or `PAI_BASE_IMAGE`), pulled when the engine lacks it;
 * 2. {@link DEFAULT_REGISTRY_BASE} when the engine has it;
 * 3. the debootstrap base `pai/base:<hash>` when the image built on it is already there;
 * 4. {@link DEFAULT_REGISTRY_BASE} when a registry gives it (the pull must start answering within
 *    `registryTimeoutMs`);
 * 5. the debootstrap base (made when `provideImage` builds, if the engine lacks it).
 *
 * Nothing is pulled while the image for a base the engine has is there, so a machine without a registry pays no
 * network wait once its image is built.
 *
 * @throws PoolError `IMAGE_UNAVAILABLE` when `baseImage` is missing and cannot be pulled (with `pull`)
 */
export async function planImage(options: PlanImageOptions): Promise<ImagePlan> {
  const { images, recipe, signal } = options;
  const withSignal = signal ? { signal } : {};
  const pull = options.pull ?? true;
  const contextLines = contextDigestLines(await readImageContext(recipe.contextDirectory));
  const given = options.baseImage ?? (process.env.PAI_BASE_IMAGE || undefined);
  if (given !== undefined) {
    let found = await images.inspect(given, withSignal);
    if (!found && pull) {
      try {
        await pullBase({ images, ref: given, onProgress: options.onProgress, signal });
      } catch (error) {
        if (signal?.aborted || !PoolError.hasCode(error, "IMAGE_UNAVAILABLE")) throw error;
        throw new PoolError(
          "IMAGE_UNAVAILABLE",
          `The base image ${given} is not on the engine and could not be pulled (${error.message}): push it to a ` +
            "registry the engine reaches, load it there (docker load), or choose another base",
          { cause: error, details: { base: given } },
        );
      }
      found = await images.inspect(given, withSignal);
    }
    return planOf(recipe, { ref: given, kind: "given", key: `${given} ${found?.id ?? ""}` }, contextLines);
  }
  const registryPlan = async () => {
    const found = await images.inspect(DEFAULT_REGISTRY_BASE, withSignal);
    return found
      ? planOf(
          recipe,
          { ref: DEFAULT_REGISTRY_BASE, kind: "registry", key: `${DEFAULT_REGISTRY_BASE} ${found.id}` },
          contextLines,
        )
      : undefined;
  };
  const local = await registryPlan();
  if (local) return local;
  const debootstrap = await debootstrapBase();
  const fallback = planOf(
    recipe,
    { ref: debootstrap.ref, kind: "debootstrap", key: debootstrap.ref },
    contextLines,
  );
  if (!pull || (await images.inspect(fallback.tag, withSignal))) return fallback;
  try {
    await pullBase({
      images,
      ref: DEFAULT_REGISTRY_BASE,
      answerWithinMs: options.registryTimeoutMs ?? 20_000,
      onProgress: options.onProgress,
      signal,
    });
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    if (PoolError.hasCode(error, "DOCKER_UNAVAILABLE")) throw error;
    options.onProgress?.({
      image: DEFAULT_REGISTRY_BASE,
      phase: "pull",
      message: `no registry gave ${DEFAULT_REGISTRY_BASE} (${(error as Error).message}); building on ${debootstrap.ref}`,
    });
    return fallback;
  }
  return (await registryPlan()) ?? fallback;
}
