import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { UpgradeListener } from "./upgrade-handler.ts";

/** A Node request listener, with the handler's `upgrade` when it has one. */
export type NodeListener = ((req: IncomingMessage, res: ServerResponse) => Promise<void>) & {
  readonly upgrade?: UpgradeListener;
};

/**
 * Adapts a fetch-style handler to `node:http`: `http.createServer(toNodeListener(handler))`.
 * Streams both ways; a client that goes away cancels the response body. The request body is read only as fast
 * as the handler reads it, and a body the handler leaves unread closes the connection after the response.
 * A handler with `upgrade` (`createPaiHandler`'s) also gets the server's WebSocket upgrades: the listener attaches
 * it to its server on the first request it serves, unless the server has an `upgrade` listener already. A server
 * whose very first request may be an upgrade attaches it itself: `server.on("upgrade", listener.upgrade)`.
 */
export function toNodeListener(
  handler: ((request: Request) => Promise<Response>) & { readonly upgrade?: UpgradeListener },
): NodeListener {
  const upgrade = handler.upgrade;
  const attached = new WeakSet<Server>();
  const attachUpgrade = (req: IncomingMessage) => {
    const server = (req.socket as { server?: Server }).server;
    if (!upgrade || !server || attached.has(server)) return;
    attached.add(server);
    if (server.listenerCount("upgrade") === 0) server.on("upgrade", upgrade);
  };
  const listener = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    attachUpgrade(req);
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
    res.writeHead(response.status, nodeHeaders(response.headers));
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
  return upgrade ? Object.assign(listener, { upgrade }) : listener;
}

/** A response's headers for `writeHead`, each `Set-Cookie` kept apart (fetch joins other repeated headers). */
function nodeHeaders(headers: Headers): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.fromEntries(headers.entries());
  const cookies = headers.getSetCookie();
  if (cookies.length > 0) out["set-cookie"] = cookies;
  return out;
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
