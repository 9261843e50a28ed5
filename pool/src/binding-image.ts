import type { ContainerDriver } from "./container-driver.ts";
import type { ImageRecipe } from "./image-context.ts";
import type { ImageProgress } from "./image-progress.ts";
import type { PoolEngine } from "./multi-engine-pool.ts";
import { type ImagePlan, planImage } from "./plan-image.ts";
import { PoolError } from "./pool-error.ts";
import { provideImage } from "./provide-image.ts";

/** Options of {@link createBindingImage}. */
export interface BindingImageOptions {
  /** The image PAI provides when `image` is not given. */
  recipe: ImageRecipe;
  /** An image of the user's: only checked on each engine (never built or pulled). */
  image?: string | undefined;
  /** The base to build `recipe` on (see `planImage`). */
  baseImage?: string | undefined;
  /** The binding's engines: the image is planned on the first that answers. */
  engines: readonly PoolEngine[];
  /** Told each line of progress while an engine's image is provided. @default {@link writeImageProgress} */
  onProgress?: ((progress: ImageProgress) => void) | undefined;
}

/** The image of a pooled binding: worked out once, then made sure of on each engine. */
export interface BindingImage {
  /**
   * The image every engine runs: the given one, or the tag `planImage` gives on the first engine that answers
   * (it may pull the base there).
   */
  resolve(signal: AbortSignal): Promise<string>;
  /**
   * Makes sure the engine has the image: a given one is looked for, PAI's own is built from the recipe when the
   * engine lacks it (see `provideImage`).
   * @throws PoolError `NOT_FOUND` (`details.image`, `details.engineId`) for a given image the engine lacks;
   * `IMAGE_UNAVAILABLE` when PAI's image cannot be provided (the message says why and what to do)
   */
  ensure(context: { engineId: string; driver: ContainerDriver; signal: AbortSignal }): Promise<void>;
}

/**
 * The default of `onProgress`: each line but a build step's own output on stderr, as
 * `pai: [engine] pai/sandbox:1a2b3c4d5e6f: Step 2/7 : RUN apt-get ...`.
 */
export function writeImageProgress(progress: ImageProgress): void {
  if (progress.phase === "output") return;
  const engine = progress.engineId ? `[${progress.engineId}] ` : "";
  process.stderr.write(`pai: ${engine}${progress.image}: ${progress.message}\n`);
}

function cannotBuild(engineId: string): PoolError {
  return new PoolError(
    "IMAGE_UNAVAILABLE",
    `The driver of engine ${engineId} cannot build images (it has no \`images\`): give the binding an image the ` +
      "engine has",
    { details: { engineId } },
  );
}

/**
 * The image side of a pooled binding (`dockerSandbox`, `dockerBrowser`): `resolve` once when it starts, `ensure` as
 * the pool's `ensureImage` (and at the start, before anything there needs the image on an engine).
 */
export function createBindingImage(options: BindingImageOptions): BindingImage {
  const onProgress = options.onProgress ?? writeImageProgress;
  let plan: ImagePlan | undefined;
  return {
    async resolve(signal) {
      if (options.image !== undefined) return options.image;
      let firstError: unknown;
      for (const engine of options.engines) {
        const { images } = engine.driver;
        if (!images) throw cannotBuild(engine.id);
        try {
          plan = await planImage({
            images,
            recipe: options.recipe,
            baseImage: options.baseImage,
            onProgress: (progress) => onProgress({ ...progress, engineId: engine.id }),
            signal,
          });
          return plan.tag;
        } catch (error) {
          if (signal.aborted || !PoolError.hasCode(error, "DOCKER_UNAVAILABLE")) throw error;
          firstError ??= error;
        }
      }
      throw firstError;
    },

    async ensure({ engineId, driver, signal }) {
      const { images } = driver;
      if (options.image !== undefined) {
        if (!images || (await images.inspect(options.image, { signal }))) return;
        throw new PoolError("NOT_FOUND", `Image ${options.image} is not on engine ${engineId}`, {
          details: { image: options.image, engineId },
        });
      }
      if (!plan) throw new Error("resolve the binding's image first");
      if (!images) throw cannotBuild(engineId);
      await provideImage({
        images,
        plan,
        onProgress: (progress) => onProgress({ ...progress, engineId }),
        signal,
      });
    },
  };
}
