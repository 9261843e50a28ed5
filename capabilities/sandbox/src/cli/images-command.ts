import { parseArgs } from "node:util";
import {
  createDockerDriver,
  ensureDebootstrapBase,
  type ImageDriver,
  type ImageProgress,
  type ImageRecipe,
  listPaiImages,
  type PaiImage,
  planImage,
  provideImage,
  prunePaiImages,
} from "@pai/pool";
import { sandboxImage } from "../sandbox-image.ts";
import { browserRecipe } from "./browser-recipe.ts";
import type { CliIo } from "./cli-io.ts";

const usage = [
  "usage: pai images build [sandbox|browser|all|base ...] [--base REF] [--force] [--print-tag]",
  "       pai images list [--base REF]",
  "       pai images prune [--base REF]",
  "",
  "PAI's container images on the Docker engine (DOCKER_HOST, or the default socket).",
  "",
  "  build      builds the images named (default: sandbox; all: sandbox and, when @pai/browser is installed,",
  "             browser; base: only the base) unless the engine has them, from the build context each package",
  "             ships; prints each image's tag on stdout (progress on stderr). Tags: pai/<name>:<12 hex of the",
  "             context and the base>, and pai/<name>:latest.",
  "  list       PAI's images: tags, size, when made, whether current (what a sandbox would run now) and in use",
  "  prune      removes PAI's images that are neither current nor used by a container",
  "",
  "  --base REF     the base image to build on (default: PAI_BASE_IMAGE; else debian:bookworm-slim when the",
  "                 engine has it or a registry gives it; else a Debian rootfs made with debootstrap)",
  "  --force        build even when the engine has the image, every step anew (e.g. to take in Debian's updates)",
  "  --print-tag    print the tags the images would have now; build and pull nothing",
];

const options = {
  base: { type: "string" },
  force: { type: "boolean", short: "f", default: false },
  "print-tag": { type: "boolean", default: false },
  "print-tags": { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
} as const;

type Parsed = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true; strict: true }>>;

/** Progress of a build as the command line shows it: a step's own output indented under it. */
function showProgress(io: CliIo) {
  return (progress: ImageProgress) =>
    io.err(
      progress.phase === "output" ? `    ${progress.message}` : `${progress.image}: ${progress.message}`,
    );
}

/** The tags provisioning would use now (nothing pulled): each image's and its base's. */
async function currentTags(images: ImageDriver, baseImage: string | undefined, signal: AbortSignal) {
  const recipes = [sandboxImage, ...[await browserRecipe()].filter((recipe) => recipe !== undefined)];
  const tags: string[] = [];
  for (const recipe of recipes) {
    const plan = await planImage({ images, recipe, baseImage, pull: false, signal });
    tags.push(plan.tag, plan.base.ref);
  }
  return tags;
}

async function build(parsed: Parsed, images: ImageDriver, io: CliIo): Promise<number> {
  const { signal } = io;
  const printOnly = parsed.values["print-tag"] || parsed.values["print-tags"];
  const baseImage = parsed.values.base;
  const names = parsed.positionals.flatMap((name) => (name === "all" ? ["sandbox", "browser?"] : [name]));
  if (names.length === 0) names.push("sandbox");
  const unknown = names.find((name) => !["sandbox", "browser", "browser?", "base"].includes(name));
  if (unknown !== undefined) {
    io.err(`pai images build: unknown image ${unknown}`);
    for (const line of usage) io.err(line);
    return 2;
  }
  const onProgress = showProgress(io);
  for (const name of names) {
    let recipe: ImageRecipe | undefined = sandboxImage;
    if (name.startsWith("browser")) {
      recipe = await browserRecipe();
      if (!recipe) {
        if (name === "browser?") continue;
        io.err("pai images build: @pai/browser is not installed (npm install @pai/browser)");
        return 1;
      }
    }
    const plan = await planImage({ images, recipe, baseImage, pull: !printOnly, onProgress, signal });
    if (name === "base") {
      if (!printOnly && plan.base.kind === "debootstrap") {
        await ensureDebootstrapBase({ images, image: plan.base.ref, onProgress, signal });
      }
      io.out(plan.base.ref);
      continue;
    }
    if (!printOnly) {
      const { built } = await provideImage({ images, plan, force: parsed.values.force, onProgress, signal });
      if (!built) io.err(`${plan.tag} up to date`);
      await images.tag(plan.tag, plan.latest, { signal });
    }
    io.out(plan.tag);
  }
  return 0;
}

const megabytes = (bytes: number) => `${Math.round(bytes / 1e6)} MB`;

function table(rows: readonly PaiImage[]): string[] {
  const lines = [
    ["TAGS", "SIZE", "CREATED", "CURRENT", "IN USE"],
    ...rows.map((image) => [
      image.tags.length > 0 ? image.tags.join(", ") : image.id.slice(7, 19),
      megabytes(image.sizeBytes),
      image.createdAt.toISOString().slice(0, 19).replace("T", " "),
      image.current ? "yes" : "no",
      image.inUse ? "yes" : "no",
    ]),
  ];
  const widths =
    lines[0]?.map((_, column) => Math.max(...lines.map((line) => line[column]?.length ?? 0))) ?? [];
  return lines.map((line) =>
    line
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join("  ")
      .trimEnd(),
  );
}

/**
 * `pai images build|list|prune`: PAI's container images on the engine `DOCKER_HOST` names. Exit code 0 when done,
 * 1 when it failed (the error on stderr), 2 for bad usage.
 */
export async function imagesCommand(args: readonly string[], io: CliIo): Promise<number> {
  const [subcommand, ...rest] = args;
  if (subcommand === "--help" || subcommand === "-h") {
    for (const line of usage) io.out(line);
    return 0;
  }
  if (subcommand !== "build" && subcommand !== "list" && subcommand !== "prune") {
    io.err(subcommand === undefined ? "pai images: which one?" : `pai images: unknown command ${subcommand}`);
    for (const line of usage) io.err(line);
    return 2;
  }
  let parsed: Parsed;
  try {
    parsed = parseArgs({ args: [...rest], options, allowPositionals: true, strict: true });
  } catch (error) {
    io.err(`pai images: ${(error as Error).message}`);
    for (const line of usage) io.err(line);
    return 2;
  }
  if (parsed.values.help) {
    for (const line of usage) io.out(line);
    return 0;
  }
  if (subcommand !== "build" && parsed.positionals.length > 0) {
    io.err(`pai images ${subcommand}: takes no image names`);
    return 2;
  }
  const { images } = createDockerDriver();
  if (!images) throw new Error("the Docker driver has no image API");
  const { signal } = io;
  try {
    if (subcommand === "build") return await build(parsed, images, io);
    const current = await currentTags(images, parsed.values.base, signal);
    if (subcommand === "list") {
      for (const line of table(await listPaiImages({ images, currentTags: current, signal }))) io.out(line);
      return 0;
    }
    const pruned = await prunePaiImages({ images, currentTags: current, signal });
    for (const { image, deleted } of pruned) {
      io.out(`${deleted ? "deleted" : "untagged"} ${image.tags.join(", ") || image.id}`);
    }
    io.err(`pai images prune: ${pruned.length} image(s) removed`);
    return 0;
  } catch (error) {
    if (signal.aborted) throw error;
    const code = (error as { code?: unknown }).code;
    io.err(
      `pai images ${subcommand}: ${typeof code === "string" ? `${code}: ` : ""}${(error as Error).message}`,
    );
    return 1;
  }
}
