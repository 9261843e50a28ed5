import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer } from "ws";
import { PaiError } from "../errors/pai-error.ts";
import type { PreviewGateway } from "../previews/preview-gateway.ts";
import type { AgentRuntime } from "../runtime/create-agent-runtime.ts";
import type { RuntimeServices } from "../runtime/runtime-services.ts";
import { serveTerminal, terminalSizeOf } from "./terminal-socket.ts";
import { refuseUpgrade as refuse, toFetchHeaders as toHeaders } from "./upgrade-socket.ts";

/** Takes over a Node `upgrade` request (`server.on("upgrade", handler.upgrade)`). */
export type UpgradeListener = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

/** What {@link createUpgradeHandler} serves and with which checks. */
export interface UpgradeHandlerOptions {
  runtime: AgentRuntime;
  services: RuntimeServices;
  gateway: PreviewGateway;
  authenticate: (request: Request) => unknown | Promise<unknown>;
  basePath: string;
  /** The capability whose facade's `openTerminal` the terminal route opens. */
  terminalCapability: string;
  onError?: ((error: unknown) => void) | undefined;
}

/** Terminals one thread may have open at once. */
const MAX_TERMINALS_PER_THREAD = 4;
/** The largest WebSocket message a terminal accepts. */
const MAX_TERMINAL_MESSAGE_BYTES = 64 * 1024;

/**
 * The handler's upgrades: a WebSocket (or any upgrade) to a preview's host is tunnelled to its port; `GET
 * <basePath>/threads/:threadId/terminal` opens a terminal in the thread's capability for the thread's own identity
 * (from a page of the app's own origin: a browser's WebSocket from another origin is refused). Anything else is
 * a 404.
 */
export function createUpgradeHandler(options: UpgradeHandlerOptions): UpgradeListener {
  const { gateway, basePath } = options;
  const sockets = new WebSocketServer({ noServer: true, maxPayload: MAX_TERMINAL_MESSAGE_BYTES });
  const openTerminals = new Map<string, number>();
  const terminalPath = new RegExp(`^${escapeRegExp(basePath)}/threads/([^/]+)/terminal$`);

  async function openTerminal(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    threadId: string,
  ): Promise<void> {
    const url = requestUrl(req);
    const request = new Request(url, { headers: toHeaders(req.headers) });
    const origin = req.headers.origin;
    if (origin !== undefined && hostOf(origin) !== req.headers.host?.toLowerCase())
      return refuse(socket, 403, "FORBIDDEN_ORIGIN", "a terminal opens only from the app's own origin");
    const identity = await options.authenticate(request);
    if (identity === null || identity === undefined)
      return refuse(socket, 401, "UNAUTHENTICATED", "authentication required");
    await options.runtime.access.requireThread(threadId, identity);
    const size = terminalSizeOf(url);
    if ((openTerminals.get(threadId) ?? 0) >= MAX_TERMINALS_PER_THREAD)
      return refuse(
        socket,
        429,
        "TOO_MANY_TERMINALS",
        `a thread has at most ${MAX_TERMINALS_PER_THREAD} terminals open`,
      );
    const controller = new AbortController();
    const use = options.services.useThreadFacade({
      threadId,
      identityKey: options.runtime.identityKey(identity),
      capability: options.terminalCapability,
      signal: controller.signal,
    });
    openTerminals.set(threadId, (openTerminals.get(threadId) ?? 0) + 1);
    sockets.handleUpgrade(req, socket, head, (webSocket) => {
      void serveTerminal(webSocket, use, size, controller).finally(() => {
        const left = (openTerminals.get(threadId) ?? 1) - 1;
        if (left > 0) openTerminals.set(threadId, left);
        else openTerminals.delete(threadId);
      });
    });
  }

  return (req, socket, head) => {
    socket.on("error", () => socket.destroy());
    void (async () => {
      try {
        const previewId = gateway.previewIdOf(req.headers.host);
        if (previewId !== undefined) return await gateway.upgrade(req, socket, head, previewId);
        const match = terminalPath.exec(requestUrl(req).pathname);
        if (match && req.method === "GET")
          return await openTerminal(req, socket, head, decodeURIComponent(match[1]!));
        refuse(socket, 404, "NOT_FOUND", "nothing to upgrade here");
      } catch (error) {
        if (PaiError.isInstance(error)) {
          const status = error.code === "NOT_FOUND" ? 404 : error.code === "BAD_REQUEST" ? 400 : 403;
          refuse(socket, status, error.code, error.message);
          return;
        }
        options.onError?.(error);
        refuse(socket, 500, "INTERNAL", "An internal error occurred.");
      }
    })();
  };
}

function requestUrl(req: IncomingMessage): URL {
  try {
    return new URL(req.url ?? "/", `http://${req.headers.host ?? "localhost"}`);
  } catch {
    return new URL(req.url ?? "/", "http://localhost");
  }
}

function hostOf(origin: string): string | undefined {
  try {
    return new URL(origin).host.toLowerCase();
  } catch {
    return undefined;
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
