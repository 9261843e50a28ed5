import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  type CallToolResult,
  ErrorCode,
  type Tool as McpToolDescription,
  McpError as SdkMcpError,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { McpError } from "./mcp-error.ts";

export type { McpToolDescription };

/** Options of {@link createMcpConnection}. */
export interface McpConnectionOptions {
  /** Names the server in messages (`mcp server "github"`). */
  label: string;
  /** Opens a new transport to the server (a new process for stdio). */
  open(signal: AbortSignal): Promise<Transport>;
  /** How long connecting and initializing may take. */
  connectTimeoutMs: number;
  /** Extra words for an error once the server is gone (its exit code, the tail of its stderr). */
  describeExit?: () => string;
  /** Called once the connection's transport is closed (the process ended, the set closed it). */
  onClosed?: () => void;
}

/** One MCP client on one server: connected on first use, again after a failure, closed by `close()`. */
export interface McpConnection {
  /** The server's tools: asked once, and again after `notifications/tools/list_changed` or a reconnect. */
  listTools(options: { signal: AbortSignal }): Promise<McpToolDescription[]>;
  /** Calls a tool; rejects with an {@link McpError} (or the signal's reason once it aborts). */
  callTool(options: {
    name: string;
    arguments: Record<string, unknown>;
    signal: AbortSignal;
    timeoutMs: number;
  }): Promise<CallToolResult>;
  /** The tools as last listed, without asking the server (`undefined` before the first list). */
  readonly knownTools: McpToolDescription[] | undefined;
  close(): Promise<void>;
}

interface Session {
  client: Client;
  /** Set by a protocol error: what the calls the session's end fails get. */
  fatal: McpError | undefined;
  closed: boolean;
}

/**
 * An MCP client (the SDK's `Client`) on the transport `open` makes. A transport error that means the server broke
 * the protocol (a line that is not JSON-RPC, a line over the bound) ends the session, failing its calls with
 * `MCP_PROTOCOL`; a session that ends otherwise fails them with `MCP_SERVER_EXITED`. The next call opens a new one.
 */
export function createMcpConnection(options: McpConnectionOptions): McpConnection {
  let session: Promise<Session> | undefined;
  let tools: McpToolDescription[] | undefined;
  let stale = true;
  let closed = false;

  async function connect(signal: AbortSignal): Promise<Session> {
    const client = new Client({ name: "pai", version: "0.1.0" }, { capabilities: {} });
    const current: Session = { client, fatal: undefined, closed: false };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      stale = true;
    });
    client.onerror = (error) => {
      if (!isProtocolError(error) || current.fatal) return;
      current.fatal = new McpError(
        "MCP_PROTOCOL",
        `mcp server ${options.label} broke the protocol: ${error.message}`,
        {
          cause: error,
        },
      );
      void client.close().catch(() => undefined);
    };
    client.onclose = () => {
      current.closed = true;
      stale = true;
      if (session && sessionIs(current)) session = undefined;
      options.onClosed?.();
    };
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(options.connectTimeoutMs)]);
    try {
      const transport = await options.open(deadline);
      await client.connect(transport, { signal: deadline, timeout: options.connectTimeoutMs });
    } catch (error) {
      await client.close().catch(() => undefined);
      signal.throwIfAborted();
      throw (
        current.fatal ??
        new McpError(
          "MCP_CONNECT_FAILED",
          `mcp server ${options.label} could not be connected: ${messageOf(error)}${exitNote()}`,
          {
            cause: error,
          },
        )
      );
    }
    return current;
  }

  let settledSession: Session | undefined;
  const sessionIs = (candidate: Session) => settledSession === candidate;

  async function ready(signal: AbortSignal): Promise<Session> {
    if (closed) throw new McpError("MCP_CLOSED", `mcp server ${options.label}: the tool set is closed`);
    session ??= connect(signal).then(
      (opened) => {
        settledSession = opened;
        return opened;
      },
      (error: unknown) => {
        session = undefined;
        throw error;
      },
    );
    return session;
  }

  function exitNote(): string {
    const note = options.describeExit?.();
    return note ? ` (${note})` : "";
  }

  function failureOf(error: unknown, current: Session, signal: AbortSignal, timeoutMs: number): unknown {
    if (signal.aborted) return signal.reason;
    if (current.fatal) return current.fatal;
    if (error instanceof SdkMcpError) {
      if (error.code === ErrorCode.RequestTimeout) {
        return new McpError(
          "MCP_TIMEOUT",
          `mcp server ${options.label} did not answer within ${timeoutMs} ms`,
          {
            cause: error,
          },
        );
      }
      if (error.code === ErrorCode.ConnectionClosed) {
        return new McpError(
          "MCP_SERVER_EXITED",
          `mcp server ${options.label} went away during the call${exitNote()}`,
          {
            cause: error,
          },
        );
      }
      return new McpError(
        "MCP_TOOL_FAILED",
        `mcp server ${options.label} refused the call: ${error.message}`,
        {
          cause: error,
          details: { rpcCode: error.code },
        },
      );
    }
    if (current.closed) {
      return new McpError("MCP_SERVER_EXITED", `mcp server ${options.label} went away${exitNote()}`, {
        cause: error,
      });
    }
    return new McpError("MCP_PROTOCOL", `mcp server ${options.label}: ${messageOf(error)}`, { cause: error });
  }

  return {
    get knownTools() {
      return tools;
    },
    async listTools({ signal }) {
      const current = await ready(signal);
      if (!stale && tools) return tools;
      stale = false;
      try {
        const listed: McpToolDescription[] = [];
        let cursor: string | undefined;
        do {
          const page = await current.client.listTools(cursor ? { cursor } : {}, {
            signal,
            timeout: options.connectTimeoutMs,
          });
          listed.push(...page.tools);
          cursor = page.nextCursor;
        } while (cursor);
        tools = listed;
        return listed;
      } catch (error) {
        stale = true;
        throw failureOf(error, current, signal, options.connectTimeoutMs);
      }
    },
    async callTool({ name, arguments: args, signal, timeoutMs }) {
      const current = await ready(signal);
      try {
        return (await current.client.callTool({ name, arguments: args }, undefined, {
          signal,
          timeout: timeoutMs,
        })) as CallToolResult;
      } catch (error) {
        throw failureOf(error, current, signal, timeoutMs);
      }
    },
    async close() {
      closed = true;
      const current = await session?.catch(() => undefined);
      session = undefined;
      await current?.client.close().catch(() => undefined);
    },
  };
}

/** Errors a transport reports for bytes that are not the protocol (not for a lost network stream). */
function isProtocolError(error: Error): boolean {
  return (
    McpError.hasCode(error, "MCP_PROTOCOL") ||
    error instanceof SyntaxError ||
    error.name === "ZodError" ||
    /ReadBuffer exceeded/.test(error.message)
  );
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
