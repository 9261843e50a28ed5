import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import {
  type AgentRuntime,
  type CapabilityBinding,
  createAgentRuntime,
  createFileCheckpointStore,
  createPai,
  createPaiHandler,
  createSqliteThreadStore,
  toNodeListener,
} from "@pai/core";
import { dockerSandbox, type SandboxFacade } from "@pai/sandbox";
import { type SelectedModel, selectModel } from "../select-model.ts";
import { ensurePageBuilt, pageDist } from "./build-page.ts";
import { chatAgent } from "./chat-agent.ts";
import { demoIdentity } from "./demo-identity.ts";
import { createStaticHandler } from "./serve-static.ts";

/** What {@link createChatServer} accepts. */
export interface ChatServerOptions {
  /** @default 0 (any free port) */
  port?: number;
  /** Never a public address: the demo identity has no password. @default "127.0.0.1" */
  host?: string;
  /** The SQLite file threads live in. @default ".pai/chat.db" */
  dbPath?: string;
  /**
   * Where the checkpoints of each conversation's sandbox go (taken when a run ends; Edit, Regenerate and Fork
   * restore them). @default a `checkpoints` folder beside `dbPath`
   */
  checkpointsDir?: string;
  /** @default selectModel() — a real model from the environment, else the scripted plan */
  model?: SelectedModel;
  /**
   * How sandboxes are provided.
   * @default dockerSandbox({ pool: { min: 1, max: 4 }, poolId, codeInterpreter: { prewarm: ["python"] } })
   */
  sandbox?: CapabilityBinding<SandboxFacade>;
  /** The sandbox pool's label: one per live server on an engine. @default "pai-chat" */
  poolId?: string;
  /** Build the page first when `dist` is missing or stale. @default true */
  buildPage?: boolean;
  log?: (line: string) => void;
}

/** A running chat server. */
export interface ChatServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  runtime: AgentRuntime;
  model: SelectedModel;
  /** Stops accepting requests, cancels runs, removes sandboxes, closes the store. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** The agent id the page talks to. */
export const CHAT_AGENT_ID = "chat";

/**
 * Starts the chat app: PAI's HTTP handler under `/api` (and for the previews of servers started in sandboxes, on
 * hosts of their own) with its WebSockets (the terminal, previews), and the Vite-built page for everything else.
 * @example
 * await using server = await createChatServer({ port: 3000 });
 * console.log(`PAI chat on ${server.url}`);
 */
export async function createChatServer(options: ChatServerOptions = {}): Promise<ChatServer> {
  const log = options.log ?? (() => {});
  if (options.buildPage ?? true) await ensurePageBuilt({ log });
  const model = options.model ?? selectModel();
  const binding =
    options.sandbox ??
    dockerSandbox({
      pool: { min: 1, max: 4 },
      poolId: options.poolId ?? "pai-chat",
      // IPython runs in the warm containers: a conversation's first code interpreter cell does not wait for it
      codeInterpreter: { prewarm: ["python"] },
    });
  const dbPath = options.dbPath ?? ".pai/chat.db";
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { [CHAT_AGENT_ID]: chatAgent } }),
    store: createSqliteThreadStore({ path: dbPath }),
    model: model.model,
    capabilities: { sandbox: binding },
    checkpoints: {
      store: createFileCheckpointStore({
        directory: options.checkpointsDir ?? join(dirname(dbPath), "checkpoints"),
      }),
    },
  });
  try {
    log("warming the sandbox pool");
    await runtime.startCapabilities();
  } catch (error) {
    await runtime.close().catch(() => undefined);
    throw new Error(
      "the sandbox could not start: is the Docker engine up (bash scripts/docker-engine)? " +
        `${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  const api = toNodeListener(
    createPaiHandler({
      runtime,
      authenticate: demoIdentity,
      basePath: "/api",
      defaultAgentId: CHAT_AGENT_ID,
      onError: (error) => console.error("[pai chat]", error),
    }),
  );
  const page = createStaticHandler(pageDist);
  const host = options.host ?? "127.0.0.1";
  const server = createServer((req, res) => {
    const path = req.url ?? "/";
    // the app's own host gets the page and the API; any other (a preview's `<id>.localhost`) only PAI's handler,
    // which serves a live preview and refuses the rest
    const forPage = isAppHost(req.headers.host, host) && path !== "/api" && !path.startsWith("/api/");
    void (forPage ? page(req, res) : api(req, res));
  });
  // WebSockets: the Terminal panel's, and those of the pages previews serve (from the first request on, which may
  // well be the page's)
  if (api.upgrade) server.on("upgrade", api.upgrade);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await runtime.close();
      await closed;
    })();
    return closing;
  };
  return {
    url: `http://${address.address}:${address.port}`,
    runtime,
    model,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** Whether a request's `Host` names the app itself (its listening host, or loopback by name or address). */
function isAppHost(header: string | undefined, host: string): boolean {
  if (!header) return false;
  let hostname: string;
  try {
    hostname = new URL(`http://${header}`).hostname;
  } catch {
    return false;
  }
  return hostname === host || hostname === "127.0.0.1" || hostname === "localhost" || hostname === "[::1]";
}
