import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";

/** An MCP server over streamable HTTP. */
export interface McpHttpServer {
  url: string | URL;
  /** Sent with every request (an `Authorization` header, say). */
  headers?: Readonly<Record<string, string>>;
}

/** An MCP server as a process on the host, over stdio (started with the SDK's stdio transport). */
export interface McpStdioServer {
  command: string;
  args?: readonly string[];
  /** Over the SDK's default environment (`HOME`, `PATH`, ...; not the whole of `process.env`). */
  env?: Readonly<Record<string, string>>;
  cwd?: string;
}

/** A server PAI reaches from the host. */
export type McpHostServer = McpHttpServer | McpStdioServer;

const STDERR_TAIL = 2048;

/** A host transport, with what is known of how a stdio server's process ended. */
export interface HostTransport {
  transport: Transport;
  describeExit(): string;
}

/** A new transport to a host server: streamable HTTP for `{ url }`, a new process for `{ command }`. */
export function openHostTransport(server: McpHostServer, options: { maxLineBytes: number }): HostTransport {
  if ("url" in server) {
    const transport = new StreamableHTTPClientTransport(new URL(server.url), {
      ...(server.headers ? { requestInit: { headers: { ...server.headers } } } : {}),
    });
    return { transport, describeExit: () => "" };
  }
  let stderr = "";
  const transport = new StdioClientTransport({
    command: server.command,
    args: [...(server.args ?? [])],
    ...(server.env ? { env: { ...server.env } } : {}),
    ...(server.cwd ? { cwd: server.cwd } : {}),
    stderr: "pipe",
    maxBufferSize: options.maxLineBytes,
  });
  // the tail only, for the message of a server that exits
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-STDERR_TAIL);
  });
  return {
    transport,
    describeExit: () => (stderr.trim() ? `stderr: ${stderr.trim().slice(-500)}` : ""),
  };
}
