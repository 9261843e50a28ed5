import { lookup } from "node:dns/promises";
import { debootstrapBase, ensureDebootstrapBase } from "./debootstrap-base.ts";
import { acquireFileLock } from "./file-lock.ts";
import { packImageContext, readImageContext } from "./image-context.ts";
import type { ImageDriver } from "./image-driver.ts";
import type { ImageProgress } from "./image-progress.ts";
import { type ImagePlan, pullBase } from "./plan-image.ts";
import { PoolError } from "./pool-error.ts";

/** Options of {@link provideImage}. */
export interface ProvideImageOptions {
  /** The engine to provide the image on. */
  images: ImageDriver;
  /** What to provide (see `planImage`). */
  plan: ImagePlan;
  /**
   * Build even when the engine has the image, every step anew (no layer of an earlier build reused), e.g. to take
   * in Debian's updates. @default false
   */
  force?: boolean;
  /** Told each line of progress: waiting for another process, pulling or making the base, each build step. */
  onProgress?: ((progress: ImageProgress) => void) | undefined;
  signal?: AbortSignal | undefined;
}

/** What {@link provideImage} did. */
export interface ProvidedImage {
  /** The image's tag (the plan's). */
  tag: string;
  /** `true` when this call built it; `false` when it was there (or another process built it meanwhile). */
  built: boolean;
}

/**
 * `name:address` for the apt mirrors' host names (and deb.debian.org, which registry bases use), resolved on this
 * machine, so the build's `RUN` steps need no DNS server of their own. `PAI_BUILD_PIN_HOSTS=0` turns it off.
 */
async function pinnedHosts(): Promise<string[]> {
  if (process.env.PAI_BUILD_PIN_HOSTS === "0") return [];
  const { mirror, security } = (await debootstrapBase()).mirrors;
  const names = new Set<string>();
  for (const uri of [mirror, security, "http://deb.debian.org/"]) {
    const name = /^[a-z]+:\/\/([^/:]+)/i.exec(uri)?.[1];
    if (name && !/^[0-9.]+$/.test(name)) names.add(name);
  }
  const pinned: string[] = [];
  for (const name of names) {
    const found = await lookup(name, { family: 4 }).catch(() => undefined);
    if (found) pinned.push(`${name}:${found.address}`);
  }
  return pinned;
}

/** Makes sure the engine has the plan's base: pulled (a registry base), or the debootstrap base made or imported. */
async function ensureBase(options: ProvideImageOptions): Promise<void> {
  const { images, plan, signal } = options;
  if (plan.base.kind === "debootstrap") {
    await ensureDebootstrapBase({ images, image: plan.tag, onProgress: options.onProgress, signal });
    return;
  }
  if (await images.inspect(plan.base.ref, signal ? { signal } : {})) return;
  try {
    await pullBase({ images, ref: plan.base.ref, onProgress: options.onProgress, signal });
  } catch (error) {
    if (signal?.aborted || !PoolError.hasCode(error, "IMAGE_UNAVAILABLE")) throw error;
    throw new PoolError(
      "IMAGE_UNAVAILABLE",
      `Cannot build ${plan.tag}: the engine lacks its base ${plan.base.ref} and could not pull it ` +
        `(${error.message}). Push the base to a registry the engine reaches, load it there (docker load), or ` +
        "choose another base",
      { cause: error, details: { image: plan.tag, base: plan.base.ref } },
    );
  }
}

/** Builds the plan's image (the lock held), telling each step and output line. */
async function build(options: ProvideImageOptions): Promise<void> {
  const { images, plan, signal } = options;
  const report = (phase: ImageProgress["phase"], message: string) =>
    options.onProgress?.({ image: plan.tag, phase, message });
  const startedAt = Date.now();
  report("step", `building ${plan.tag} on ${plan.base.ref}`);
  const recent: string[] = [];
  try {
    await images.build({
      context: packImageContext(await readImageContext(plan.recipe.contextDirectory)),
      tags: [plan.tag, plan.latest],
      buildArgs: { BASE_IMAGE: plan.base.ref },
      labels: { "pai.image": plan.recipe.name, "pai.content-hash": plan.hash, "pai.base": plan.base.ref },
      networkMode: "host",
      extraHosts: await pinnedHosts(),
      noCache: options.force === true,
      onOutput: (line) => {
        const step = /^Step \d+\/\d+ : /.test(line);
        if (!step) recent.push(line);
        if (recent.length > 10) recent.shift();
        report(step ? "step" : "output", line);
      },
      ...(signal ? { signal } : {}),
    });
  } catch (error) {
    if (signal?.aborted || !PoolError.hasCode(error, "IMAGE_UNAVAILABLE")) throw error;
    const tail = recent.slice(-5).join(" | ");
    throw new PoolError(
      "IMAGE_UNAVAILABLE",
      `Building ${plan.tag} failed: ${error.message}${tail ? ` (last output: ${tail})` : ""}`,
      { cause: error, details: { image: plan.tag, base: plan.base.ref, output: recent.join("\n") } },
    );
  }
  const built = await images.inspect(plan.tag, signal ? { signal } : {});
  const size = built ? `, ${Math.round(built.sizeBytes / 1e6)} MB` : "";
  report("done", `built ${plan.tag} in ${Math.round((Date.now() - startedAt) / 1000)} s${size}`);
}

/**
 * Makes sure the engine has the plan's image, building it from the recipe's context when it lacks it (or with
 * `force`): the base is pulled or made first (see `ensureDebootstrapBase`), then the Engine API builds the context
 * (the classic builder, `RUN` steps on the host network, the apt mirrors' names pinned), tagging the image
 * `pai/<name>:<hash>` and `pai/<name>:latest`, labelled `pai.image`, `pai.content-hash`, `pai.base`.
 *
 * Processes of this machine that provide the same image on the same engine at once build it once: each takes a
 * lock file keyed by the engine's id and the tag (`acquireFileLock`); the others wait (a `wait` progress line),
 * then find the image there.
 *
 * @throws PoolError `IMAGE_UNAVAILABLE` when the base cannot be had or the build fails (the message says why and
 * what to do), `DOCKER_UNAVAILABLE` when the engine does not answer.
 */
export async function provideImage(options: ProvideImageOptions): Promise<ProvidedImage> {
  const { images, plan, signal } = options;
  const withSignal = signal ? { signal } : {};
  const present = async () => (await images.inspect(plan.tag, withSignal)) !== undefined;
  if (!options.force && (await present())) return { tag: plan.tag, built: false };
  const engineId = await images.engineId(withSignal);
  let waited = false;
  const lock = await acquireFileLock({
    name: `image ${engineId} ${plan.tag}`,
    onWait: (owner) => {
      waited = true;
      options.onProgress?.({
        image: plan.tag,
        phase: "wait",
        message: `another process${owner ? ` (pid ${owner.pid})` : ""} is providing ${plan.tag} on this engine; waiting for it`,
      });
    },
    ...withSignal,
  });
  try {
    // The process we waited for built it (a forced build waited for is as good as our own).
    if ((!options.force || waited) && (await present())) {
      options.onProgress?.({ image: plan.tag, phase: "done", message: `${plan.tag} is there` });
      return { tag: plan.tag, built: false };
    }
    await ensureBase(options);
    await build(options);
    return { tag: plan.tag, built: true };
  } finally {
    await lock.release();
  }
}
