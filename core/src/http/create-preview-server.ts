import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { PaiError } from "../errors/pai-error.ts";
import type { AgentRuntime } from "../runtime/create-agent-runtime.ts";
import { runtimeServices } from "../runtime/runtime-services.ts";
import { previewGatewayOf } from "./create-pai-handler.ts";
import { toNodeListener } from "./node-listener.ts";
import { refuseUpgrade } from "./upgrade-socket.ts";

/** Options of {@link createPreviewServer}. */
export interface PreviewServerOptions {
  runtime: AgentRuntime;
  /** Who is calling, for previews opened with `access: "identity"` (as `createPaiHandler`'s). */
  authenticate?: (request: Request) => unknown | Promise<unknown>;
  /** @default 0 (any free port) */
  port?: number;
  /** @default "127.0.0.1" */
  host?: string;
}

/** A running preview server. */
export interface PreviewServer {
  /** Where it listens, e.g. `http://localhost:41234`; previews are `http://<id>.localhost:41234/`. */
  url: string;
  server: Server;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * A server of previews only, for an app that serves them apart from its API (another port, another domain). It
 * answers requests and upgrades whose `Host` is a preview's and refuses every other with 404. Unless the runtime's
 * `previews.baseUrl` names where previews are, its address becomes it.
 * @example
 * await using previews = await createPreviewServer({ runtime, port: 4100 });
 */
export async function createPreviewServer(options: PreviewServerOptions): Promise<PreviewServer> {
  const services = runtimeServices(options.runtime);
  if (!services)
    throw new PaiError("INVALID_ARGUMENT", "createPreviewServer needs a runtime made by createAgentRuntime");
  const gateway = previewGatewayOf(services, options.runtime, options.authenticate ?? (() => undefined));
  const notFound = () =>
    new Response(JSON.stringify({ error: { code: "PREVIEW_NOT_FOUND", message: "not a preview" } }), {
      status: 404,
      headers: { "content-type": "application/json" },
    });
  const handler = Object.assign(
    async (request: Request) => {
      const id = gateway.previewIdOf(request.headers.get("host"));
      return id === undefined ? notFound() : gateway.handle(request, id);
    },
    {
      upgrade: (
        req: Parameters<typeof gateway.upgrade>[0],
        socket: Parameters<typeof gateway.upgrade>[1],
        head: Buffer,
      ) => {
        socket.on("error", () => socket.destroy());
        const id = gateway.previewIdOf(req.headers.host);
        if (id === undefined) refuseUpgrade(socket, 404, "PREVIEW_NOT_FOUND", "not a preview");
        else void gateway.upgrade(req, socket, head, id);
      },
    },
  );
  const listener = toNodeListener(handler);
  const server = createServer(listener);
  server.on("upgrade", handler.upgrade);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://localhost:${port}`;
  services.previews.learnBaseUrl(url);
  const close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return { url, server, close, [Symbol.asyncDispose]: close };
}
