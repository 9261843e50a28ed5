import type { ImageDriver, ImageSummary } from "./image-driver.ts";

/** One of PAI's images on an engine (labelled `pai.image`), as {@link listPaiImages} sees it. */
export interface PaiImage extends ImageSummary {
  /** Its `pai.image` label: `sandbox`, `browser`, `base`... */
  name: string;
  /** One of its tags is among the current ones: what provisioning would run (or build on) now. */
  current: boolean;
  /** A container of the engine (running or not) was made from it. */
  inUse: boolean;
}

/** The label every image PAI builds or imports carries. */
const IMAGE_LABEL = "pai.image";

/**
 * PAI's images on the engine, newest first, each marked current (one of its tags is in `currentTags`, e.g. the tags
 * `planImage` gives now and their bases) and in use (by any container).
 */
export async function listPaiImages(options: {
  images: ImageDriver;
  currentTags: readonly string[];
  signal?: AbortSignal | undefined;
}): Promise<PaiImage[]> {
  const withSignal = options.signal ? { signal: options.signal } : {};
  const [found, used] = await Promise.all([
    options.images.list(IMAGE_LABEL, withSignal),
    options.images.usedImageIds(withSignal),
  ]);
  const current = new Set(options.currentTags);
  return found
    .map((image) => ({
      ...image,
      name: image.labels[IMAGE_LABEL] ?? "",
      current: image.tags.some((tag) => current.has(tag)),
      inUse: used.has(image.id),
    }))
    .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
}

/** What {@link prunePaiImages} removed. */
export interface PrunedImage {
  image: PaiImage;
  /** The image's data was deleted (`false`: only its tags went, as another image is built on it). */
  deleted: boolean;
}

/**
 * Removes PAI's images that are neither current nor in use (see {@link listPaiImages}): each of their tags, and with
 * the last one the image itself unless another image is built on it.
 */
export async function prunePaiImages(options: {
  images: ImageDriver;
  currentTags: readonly string[];
  signal?: AbortSignal | undefined;
}): Promise<PrunedImage[]> {
  const withSignal = options.signal ? { signal: options.signal } : {};
  const pruned: PrunedImage[] = [];
  for (const image of await listPaiImages(options)) {
    if (image.current || image.inUse) continue;
    let deleted = false;
    for (const ref of image.tags.length > 0 ? image.tags : [image.id]) {
      deleted = (await options.images.remove(ref, withSignal)) || deleted;
    }
    pruned.push({ image, deleted });
  }
  return pruned;
}
