import { request } from "node:http";

/**
 * Whether a volume plugin answers on `socket`: it activates as a `VolumeDriver` (`POST /Plugin.Activate`, the
 * first call Docker makes). `false` when nothing listens, it answers something else, or it takes over 10 s.
 */
export function diskPluginAnswers(socket: string, options: { signal: AbortSignal }): Promise<boolean> {
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
        response.on("end", () => resolve(response.statusCode === 200 && body.includes("VolumeDriver")));
        response.on("error", () => resolve(false));
      },
    );
    call.on("error", () => resolve(false));
    call.end("{}");
  });
}
