import type { ImageRecipe } from "@pai/pool";

/**
 * `@pai/browser`, an optional peer: loaded at run time when installed beside this package, its types not needed to
 * build this one.
 */
const BROWSER_PACKAGE = "@pai/browser";

/** The browser image's recipe when `@pai/browser` is installed beside this package, else `undefined`. */
export async function browserRecipe(): Promise<ImageRecipe | undefined> {
  try {
    return ((await import(BROWSER_PACKAGE)) as { browserImage: ImageRecipe }).browserImage;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ERR_MODULE_NOT_FOUND") return undefined;
    throw error;
  }
}
