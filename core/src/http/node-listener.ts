import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";

/**
 * Adapts a fetch-style handler to `node:http`: `http.createServer(toNodeListener(handler))`.
 * Streams both ways; a client that goes away cancels the response body.
 */
export function toNodeListener(
  handler: (request: Request) => Promise<Response>,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (req, res) => {
    const controller = new AbortController();
    res.on("close", () => controller.abort());
    const origin = `http://${req.headers.host ?? "127.0.0.1"}`;
    const hasBody = req.method !== "GET" && req.method !== "HEAD";
    const request = new Request(new URL(req.url ?? "/", origin), {
      method: req.method ?? "GET",
      headers: Object.entries(req.headers).flatMap(([name, value]) =>
        value === undefined
          ? []
          : Array.isArray(value)
            ? value.map((v) => [name, v] as [string, string])
            : [[name, value] as [string, string]],
      ),
      signal: controller.signal,
      ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream<Uint8Array>, duplex: "half" } : {}),
    } as RequestInit);
    let response: Response;
    try {
      response = await handler(request);
    } catch {
      response = new Response(
        JSON.stringify({ error: { code: "INTERNAL", message: "An internal error occurred." } }),
        { status: 500 },
      );
    }
    res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
    if (!response.body) {
      res.end();
      return;
    }
    const reader = response.body.getReader();
    controller.signal.addEventListener("abort", () => void reader.cancel().catch(() => undefined), {
      once: true,
    });
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (!res.write(value)) await new Promise<void>((resolve) => res.once("drain", resolve));
      }
    } catch {
      // the client went away
    } finally {
      res.end();
    }
  };
}
