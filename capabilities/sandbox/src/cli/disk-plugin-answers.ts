import { request } from "node:http";

/**
 * What a volume plugin's socket says to `POST /Plugin.Activate`, the first call Docker makes: `answers` when a
 * `VolumeDriver` activates there, `no-access` when the socket refuses this user (the plugin's socket admits root
 * only), `silent` when nothing listens, it answers something else, or it takes over 10 s.
 */
export type DiskPluginAnswer = "answers" | "no-access" | "silent";

/** Asks the volume plugin on `socket` whether it is there: see {@link DiskPluginAnswer}. */
export function diskPluginAnswers(
  socket: string,
  options: { signal: AbortSignal },
): Promise<DiskPluginAnswer> {
  const signal = AbortSignal.any([options.signal, AbortSignal.timeout(10_000)]);
  return new Promise((resolve) => {
    const call = request(
      { socketPath: socket, path: "/Plugin.Activate", method: "POST", signal },
      (response) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          body += chunk;
        });
        response.on("end", () =>
          resolve(response.statusCode === 200 && body.includes("VolumeDriver") ? "answers" : "silent"),
        );
        response.on("error", () => resolve("silent"));
      },
    );
    call.on("error", (error: NodeJS.ErrnoException) =>
      resolve(error.code === "EACCES" ? "no-access" : "silent"),
    );
    call.end("{}");
  });
}
