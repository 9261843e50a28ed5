import { type McpHostServer, openHostTransport } from "./host-transport.ts";
import { createMcpConnection } from "./mcp-connection.ts";
import { McpError } from "./mcp-error.ts";
import { createMcpToolSet, type McpToolSet, type McpToolsOptions } from "./mcp-tool-set.ts";
import { serverName } from "./server-name.ts";

/**
 * An MCP server's tools as PAI tools: `defineAgent({ tools: { github: mcpTools({ url }) } })`. The server is
 * reached from the host over streamable HTTP (`{ url, headers? }`) or stdio (`{ command, args?, env?, cwd? }`, a
 * process this one starts), through one client per tool set, connected on first use and again after a failure.
 * Its tools are listed when a run starts and asked again after the server says its list changed, so a tool it adds
 * is offered from the run's next step. Each tool's JSON Schema goes to the model as is; results keep their text,
 * images and structured content; a failed call (`isError`, a timeout, a server gone) reaches the model as a planned
 * failure with its {@link McpError} code. A server that should run inside the conversation's sandbox takes
 * `mcpTools` from `@pai/mcp/sandbox`.
 * @example
 * const github = mcpTools({ url: "https://mcp.example.com/mcp" }, { requireApproval: true });
 * export const agent = defineAgent({ tools: { github } });
 * // later: await github.close();
 */
export function mcpTools(server: McpHostServer, options: McpToolsOptions = {}): McpToolSet {
  assertHostServer(server);
  const name = options.name ?? serverName(server);
  const maxLineBytes = options.maxLineBytes ?? 4 * 1024 * 1024;
  let describeExit = () => "";
  const connection = createMcpConnection({
    label: `"${name}"`,
    connectTimeoutMs: options.connectTimeoutMs ?? 20_000,
    describeExit: () => describeExit(),
    open: async () => {
      const opened = openHostTransport(server, { maxLineBytes });
      describeExit = opened.describeExit;
      return opened.transport;
    },
  });
  return createMcpToolSet({
    name,
    settings: options,
    connections: {
      capabilities: {},
      forListing: () => connection,
      forCall: () => connection,
      known: () => connection.knownTools,
      close: () => connection.close(),
    },
  });
}

function assertHostServer(server: McpHostServer): void {
  const given = server as Partial<Record<"url" | "command" | "sandbox", unknown>>;
  if (given.sandbox !== undefined) {
    throw new McpError(
      "INVALID_ARGUMENT",
      'a server inside the sandbox ({ sandbox: { command } }) takes mcpTools from "@pai/mcp/sandbox"',
    );
  }
  if (typeof given.url !== "string" && !(given.url instanceof URL) && typeof given.command !== "string") {
    throw new McpError(
      "INVALID_ARGUMENT",
      "an MCP server is { url } (streamable HTTP) or { command, args } (stdio)",
    );
  }
}
