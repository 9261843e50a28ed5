import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { type JSONRPCMessage, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import type { CommandResult, SandboxFacade, SandboxProcess } from "@pai/sandbox";
import { McpError } from "../mcp-error.ts";

/** A stdio MCP server's process inside a sandbox. */
export interface SandboxStdioServer {
  command: string;
  args?: readonly string[];
  env?: Readonly<Record<string, string>>;
  /** Relative paths resolve against the workspace. @default the workspace */
  cwd?: string;
}

/** A {@link createSandboxStdioTransport} transport, with what is known of how its process ended. */
export interface SandboxStdioTransport extends Transport {
  /** How the process ended (its exit code, the tail of its stderr), once it has. */
  describeExit(): string;
}

const STDERR_TAIL = 2048;

/**
 * An MCP transport over a process in the sandbox (started with the facade's `spawn`, through the container agent):
 * newline-delimited JSON-RPC on its stdin and stdout. A line longer than `maxLineBytes`, or one that is not
 * JSON-RPC, is a protocol error (`MCP_PROTOCOL`): the process is killed and the transport closes. Stderr keeps only
 * its tail, for the message of a server that exits.
 */
export function createSandboxStdioTransport(options: {
  sandbox: SandboxFacade;
  server: SandboxStdioServer;
  maxLineBytes: number;
}): SandboxStdioTransport {
  const { sandbox, server, maxLineBytes } = options;
  let process: SandboxProcess | undefined;
  let pending = "";
  let pendingBytes = 0;
  let stderr = "";
  let ended: CommandResult | undefined;
  let closed = false;
  let failed = false;

  const transport: SandboxStdioTransport = {
    async start() {
      process = await sandbox.spawn({
        command: server.command,
        ...(server.args ? { args: server.args } : {}),
        ...(server.env ? { env: server.env } : {}),
        ...(server.cwd ? { cwd: server.cwd } : {}),
        stdin: "pipe",
        // the streams are read through the callbacks; what the handle keeps stays small
        maxOutputBytes: STDERR_TAIL,
        maxBufferedBytes: 1,
        onOutputLimit: "truncate",
        onStdout: (chunk) => onStdout(chunk),
        onStderr: (chunk) => {
          stderr = (stderr + chunk).slice(-STDERR_TAIL);
        },
      });
      void process.wait().then(
        (result) => {
          ended = result;
          finish();
        },
        () => finish(),
      );
    },
    async send(message) {
      if (!process || closed) throw new McpError("MCP_SERVER_EXITED", "the mcp server's process has ended");
      await process.writeStdin(`${JSON.stringify(message)}\n`);
    },
    async close() {
      const running = process;
      finish();
      await running?.kill("SIGTERM", { forceKillAfterMs: 1000 }).catch(() => undefined);
    },
    describeExit() {
      const parts = ended ? [`exit code ${ended.exitCode}`] : [];
      if (stderr.trim()) parts.push(`stderr: ${stderr.trim().slice(-500)}`);
      return parts.join(", ");
    },
  };

  function onStdout(chunk: string): void {
    if (failed || closed) return;
    let text = pending + chunk;
    let newline = text.indexOf("\n");
    while (newline !== -1) {
      const line = text.slice(0, newline).replace(/\r$/, "");
      text = text.slice(newline + 1);
      if (line.trim() !== "" && !deliver(line)) return;
      newline = text.indexOf("\n");
    }
    pending = text;
    pendingBytes = Buffer.byteLength(pending);
    if (pendingBytes > maxLineBytes) {
      fail(new McpError("MCP_PROTOCOL", `the mcp server wrote a line over ${maxLineBytes} bytes`));
    }
  }

  /** Hands one line to the client; false once it was not JSON-RPC (the transport is failing then). */
  function deliver(line: string): boolean {
    if (Buffer.byteLength(line) > maxLineBytes) {
      fail(new McpError("MCP_PROTOCOL", `the mcp server wrote a line over ${maxLineBytes} bytes`));
      return false;
    }
    let message: JSONRPCMessage;
    try {
      message = JSONRPCMessageSchema.parse(JSON.parse(line));
    } catch (error) {
      fail(
        new McpError(
          "MCP_PROTOCOL",
          `the mcp server wrote a line that is not JSON-RPC: ${JSON.stringify(line.slice(0, 80))}`,
          {
            cause: error,
          },
        ),
      );
      return false;
    }
    transport.onmessage?.(message);
    return true;
  }

  function fail(error: McpError): void {
    failed = true;
    pending = "";
    transport.onerror?.(error);
    void transport.close();
  }

  function finish(): void {
    if (closed) return;
    closed = true;
    pending = "";
    transport.onclose?.();
  }

  return transport;
}
