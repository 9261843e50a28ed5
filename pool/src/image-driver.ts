import type { Readable } from "node:stream";

/** One image on an engine, as {@link ImageDriver} reports it. */
export interface ImageSummary {
  /** The image id (`sha256:...`). */
  id: string;
  /** Its tags (`repository:tag`); empty for an untagged image. */
  tags: string[];
  sizeBytes: number;
  createdAt: Date;
  labels: Readonly<Record<string, string>>;
}

/** Options of {@link ImageDriver.build}. */
export interface ImageBuildOptions {
  /** The build context as a tar stream, with the Dockerfile at its root. */
  context: Readable;
  /** The tags the built image gets (`repository:tag`), at least one. */
  tags: readonly string[];
  buildArgs?: Readonly<Record<string, string>>;
  labels?: Readonly<Record<string, string>>;
  /** Network of the build's `RUN` steps: `host` (the engine's host network) or `none`. @default "host" */
  networkMode?: "host" | "none";
  /** `name:address` lines for the build containers' /etc/hosts (e.g. the apt mirror's name, resolved beforehand). */
  extraHosts?: readonly string[];
  /** Runs every step anew instead of taking layers an earlier build left. @default false */
  noCache?: boolean;
  /** Told each line of the build's output (`Step 2/7 : RUN ...`, then that step's own output). */
  onOutput?: (line: string) => void;
  signal?: AbortSignal;
}

/** Options of {@link ImageDriver.import}. */
export interface ImageImportOptions {
  /** A root filesystem as a tar stream (what `docker import` takes). */
  archive: Readable;
  /** The image's `repository:tag`. */
  ref: string;
  /** Dockerfile instructions applied to the image (`ENV ...`, `CMD [...]`, `LABEL ...`). */
  changes?: readonly string[];
  /** The commit message of the image's one layer. */
  message?: string;
  signal?: AbortSignal;
}

/**
 * The image half of an engine: what PAI needs to provide its own images where the engine lacks them (see
 * `provideImage`) and to list and prune them. `createDockerDriver` implements it on the Engine API (`/images`,
 * `/build`: the classic builder, so an engine without buildx builds too); a driver without it (`images`
 * absent on `ContainerDriver`) runs only images that are already on its engine.
 *
 * Errors are `PoolError`s: `DOCKER_UNAVAILABLE` when the engine cannot be reached, `NOT_FOUND` for a missing image,
 * `IMAGE_UNAVAILABLE` for a failed pull or build (its message is the engine's), `CONTAINER_FAILED` otherwise. An
 * aborted call rejects with the signal's reason.
 */
export interface ImageDriver {
  /** The image `ref` (a tag or an id) names, or `undefined` when the engine has none. */
  inspect(ref: string, options?: { signal?: AbortSignal }): Promise<ImageSummary | undefined>;
  /** Every image that carries the label `label` (any value). */
  list(label: string, options?: { signal?: AbortSignal }): Promise<ImageSummary[]>;
  /** The ids of the images containers (running or not) of the engine were made from. */
  usedImageIds(options?: { signal?: AbortSignal }): Promise<Set<string>>;
  /** Pulls `ref` from its registry; `onStatus` is told each status line (`Pulling fs layer`, `Pull complete`...). */
  pull(ref: string, options?: { onStatus?: (line: string) => void; signal?: AbortSignal }): Promise<void>;
  /** Builds an image; resolves with its id. */
  build(options: ImageBuildOptions): Promise<{ id: string }>;
  /** Makes an image of one layer from a root filesystem (`docker import`). */
  import(options: ImageImportOptions): Promise<void>;
  /** Adds the tag `target` (`repository:tag`) to the image `source` names. */
  tag(source: string, target: string, options?: { signal?: AbortSignal }): Promise<void>;
  /**
   * Removes the tag or image `ref` names: the image itself goes with its last tag unless another image is built
   * on it. A missing image is not an error.
   * @returns `true` when an image was deleted, `false` when only a tag was removed (or nothing was there)
   */
  remove(ref: string, options?: { signal?: AbortSignal }): Promise<boolean>;
  /** The engine's own id (`docker info`'s `ID`): the same for every connection to one engine. */
  engineId(options?: { signal?: AbortSignal }): Promise<string>;
}
