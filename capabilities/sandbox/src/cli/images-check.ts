import { createDockerDriver, type ImageRecipe, planImage } from "@pai/pool";
import { sandboxImage } from "../sandbox-image.ts";
import { browserRecipe } from "./browser-recipe.ts";
import type { CheckResult } from "./check-result.ts";
import type { EngineTarget } from "./inspect-engine.ts";

/** One image's line: its current tag (nothing pulled) on the engine, or what builds it. */
async function imageCheck(recipe: ImageRecipe, signal: AbortSignal): Promise<CheckResult> {
  const check = `${recipe.name} image`;
  const { images } = createDockerDriver({ requestTimeoutMs: 15_000 });
  if (!images) return { check, status: "skipped", message: "the driver cannot see the engine's images" };
  const plan = await planImage({ images, recipe, pull: false, signal });
  if (await images.inspect(plan.tag, { signal })) {
    return {
      check,
      status: "ok",
      message: `${plan.tag} is on the engine, current (built on ${plan.base.ref})`,
    };
  }
  return {
    check,
    status: "failed",
    message: `${plan.tag}, the current ${recipe.name} image, is not on the engine: the first ${recipe.name} builds it (a minute or more)`,
    fix: `build it now with \`npx pai images build ${recipe.name}\``,
  };
}

/**
 * `pai doctor`'s image lines: the sandbox image, and the browser image when `@pai/browser` is installed, each
 * current (its content-hashed tag as the engine's bases give it now) and on the engine.
 */
export async function imagesCheck(engine: EngineTarget, signal: AbortSignal): Promise<CheckResult[]> {
  const recipes = [sandboxImage, ...[await browserRecipe()].filter((recipe) => recipe !== undefined)];
  if (engine.info === undefined) {
    return recipes.map((recipe) => ({
      check: `${recipe.name} image`,
      status: "skipped",
      message: "needs an engine that answers",
    }));
  }
  const results: CheckResult[] = [];
  for (const recipe of recipes) results.push(await imageCheck(recipe, signal));
  return results;
}
