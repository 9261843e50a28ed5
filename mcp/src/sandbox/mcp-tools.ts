import { type SandboxFacade, sandbox } from "@pai/sandbox";
import type { McpHostServer } from "../host-transport.ts";
import { createMcpConnection, type McpConnection } from "../mcp-connection.ts";
import { McpError } from "../mcp-error.ts";
import { createMcpToolSet, type McpToolSet, type McpToolsOptions } from "../mcp-tool-set.ts";
import { mcpTools as hostMcpTools } from "../mcp-tools.ts";
import { serverName } from "../server-name.ts";
import { createSandboxStdioTransport, type SandboxStdioServer } from "./sandbox-stdio-transport.ts";

/** A stdio MCP server that runs inside the conversation's sandbox. */
export interface McpSandboxServer {
  sandbox: SandboxStdioServer;
}

/** Any server `mcpTools` of `@pai/mcp/sandbox` takes: the host's, or one inside the sandbox. */
export type McpServer = McpHostServer | McpSandboxServer;

interface ThreadServer {
  connection: McpConnection;
  /** The facade of the latest call: a server that ended starts again in the thread's current sandbox. */
  facade: SandboxFacade;
}

/**
 * `mcpTools` of `@pai/mcp`, and servers inside the conversation's sandbox: `{ sandbox: { command, args?, env?,
 * cwd? } }` starts the server's process in the thread's sandbox through the container agent (so the sandbox's
 * limits and egress policy hold for it), one process per thread, started when a run first lists its tools and
 * ended with the sandbox's lease (or `close()`). A server that hangs fails its calls with `MCP_TIMEOUT`; one that
 * floods stdout past `maxLineBytes` or writes a line that is not JSON-RPC is killed and fails them with
 * `MCP_PROTOCOL`; one that exits fails them with `MCP_SERVER_EXITED`, and the next call starts it again. Its tools
 * need the `sandbox` capability: bind it with `createAgentRuntime({ capabilities: { sandbox: dockerSandbox() } })`.
 * @example
 * const files = mcpTools({ sandbox: { command: "node", args: ["/workspace/.mcp/files-server.js"] } });
 * export const agent = defineAgent({ tools: { files } });
 */
export function mcpTools(server: McpServer, options: McpToolsOptions = {}): McpToolSet {
  if (!("sandbox" in server)) return hostMcpTools(server, options);
  const { sandbox: process } = server;
  if (typeof process?.command !== "string") {
    throw new McpError("INVALID_ARGUMENT", "a sandbox MCP server is { sandbox: { command, args? } }");
  }
  const name = options.name ?? serverName(process);
  const maxLineBytes = options.maxLineBytes ?? 4 * 1024 * 1024;
  const connectTimeoutMs = options.connectTimeoutMs ?? 20_000;
  const threads = new Map<string, ThreadServer>();
  let closed = false;

  function serverOf(threadId: string, facade: SandboxFacade): McpConnection {
    if (closed) throw new McpError("MCP_CLOSED", `mcp server "${name}": the tool set is closed`);
    const known = threads.get(threadId);
    if (known) {
      known.facade = facade;
      return known.connection;
    }
    let describeExit = () => "";
    const entry: ThreadServer = {
      facade,
      connection: createMcpConnection({
        label: `"${name}" (in the sandbox of thread ${threadId})`,
        connectTimeoutMs,
        // its process ended (with the lease, or by itself): the thread's next call starts a new one
        onClosed: () => {
          if (threads.get(threadId) === entry) threads.delete(threadId);
        },
        describeExit: () => describeExit(),
        open: async () => {
          const transport = createSandboxStdioTransport({
            sandbox: entry.facade,
            server: process,
            maxLineBytes,
          });
          describeExit = transport.describeExit;
          return transport;
        },
      }),
    };
    threads.set(threadId, entry);
    return entry.connection;
  }

  return createMcpToolSet({
    name,
    settings: options,
    connections: {
      capabilities: { sandbox },
      forListing: ({ threadId, capabilities }) => {
        const facade = capabilities?.sandbox as SandboxFacade | undefined;
        return facade ? serverOf(threadId, facade) : undefined;
      },
      forCall: (ctx) =>
        serverOf(ctx.thread.threadId, (ctx.capabilities as { sandbox: SandboxFacade }).sandbox),
      known: (threadId) => threads.get(threadId)?.connection.knownTools,
      async close() {
        closed = true;
        const all = [...threads.values()];
        threads.clear();
        await Promise.all(all.map((entry) => entry.connection.close()));
      },
    },
  });
}
