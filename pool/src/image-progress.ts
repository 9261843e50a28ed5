/**
 * One line of progress while PAI provides an image on an engine that lacks it (see `provideImage`).
 *
 * - `wait`: another process of this machine is providing the same image there; this one waits for it.
 * - `pull`: pulling the base image (a line per layer status).
 * - `base`: making the debootstrap base (its tool's lines) or importing it into the engine.
 * - `step`: a build step (`Step 2/7 : RUN apt-get update ...`).
 * - `output`: a line the current build step printed.
 * - `done`: the image is there (`built pai/sandbox:1a2b3c4d5e6f in 64 s, 320 MB`).
 */
export interface ImageProgress {
  /** The image being provided (its content-hashed tag), or the base image being made. */
  image: string;
  phase: "wait" | "pull" | "base" | "step" | "output" | "done";
  /** One line of text. */
  message: string;
  /** The engine it happens on, when a binding spans engines (their ids). */
  engineId?: string;
}
