import type { IncomingMessage, ServerResponse } from "node:http";

/**
 * Adapts a fetch-style handler to `node:http`: `http.createServer(toNodeListener(handler))`.
 * Streams both ways; a client that goes away cancels the response body. The request body is read only as fast
 * as the handler reads it, and a body the handler leaves unread closes the connection after the response.
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
      ...(hasBody ? { body: requestBody(req), duplex: "half" } : {}),
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
    // A body the handler left unread (refused as too large, or not needed) is not drained: the connection
    // closes once the response is out, so the client stops sending.
    if (hasBody && !req.complete) res.setHeader("connection", "close");
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

/**
 * The request body as a web stream that pulls from `req` only on demand (at most one chunk ahead). Cancelling it
 * stops reading without destroying the socket, so the handler's response (a 413) still reaches the client.
 */
function requestBody(req: IncomingMessage): ReadableStream<Uint8Array> {
  let detach = () => {};
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const onData = (chunk: Buffer) => {
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 0) <= 0) req.pause();
        };
        const onEnd = () => {
          detach();
          controller.close();
        };
        const onError = (error: Error) => {
          detach();
          controller.error(error);
        };
        const onClose = () => onError(new Error("the client went away before the body ended"));
        detach = () => {
          req.off("data", onData);
          req.off("end", onEnd);
          req.off("error", onError);
          req.off("close", onClose);
        };
        req.on("data", onData);
        req.once("end", onEnd);
        req.once("error", onError);
        req.once("close", onClose);
        req.pause();
      },
      pull() {
        req.resume();
      },
      cancel() {
        detach();
        req.pause();
      },
    },
    { highWaterMark: 1 },
  );
}
