import {
  type AgentResolverArgs,
  type AnyToolDefinition,
  type CapabilityMap,
  defineTool,
  type ToolExecuteContext,
  type ToolSource,
  type ToolSourceArgs,
} from "@pai/core";
import { jsonSchema } from "ai";
import type { McpConnection, McpToolDescription } from "./mcp-connection.ts";
import { McpError } from "./mcp-error.ts";
import { mcpModelOutput, mcpResultText, mcpToolOutput } from "./mcp-tool-output.ts";

type MaybePromise<T> = T | PromiseLike<T>;

/** Options of `mcpTools`. */
export interface McpToolsOptions {
  /**
   * The server's name in its tools' wire ids (`mcp.<name>.<tool>`, recorded on every stored call) and in messages.
   * @default derived from the server: the URL's host, or the command's script (`server.js` → `server`)
   */
  name?: string;
  /**
   * What the server's tools are for, as the agent's manifest lists the set among its tool sources.
   * @default `The tools of the MCP server "<name>"`
   */
  description?: string;
  /**
   * What the model sees is `<prefix>_<tool>`.
   * @default the key the agent registers the set under (`tools: { github: mcpTools(...) }` → `github_create_issue`)
   */
  prefix?: string;
  /** Whether the model may see and call each tool (rechecked before each call, as a registration's `enabled`). */
  enabled?: boolean | ((args: AgentResolverArgs<any, any> & { mcpTool: string }) => MaybePromise<boolean>);
  /**
   * Calls that wait for a person's approval first (a `ctx.suspend`, answered like any PAI approval: `useChat`'s
   * `addToolApprovalResponse` or the actions route); a denial never reaches the server.
   * @default false
   */
  requireApproval?: boolean | ((call: { tool: string; input: unknown }) => MaybePromise<boolean>);
  /** How long one call may take before it fails with `MCP_TIMEOUT`. @default 60000 */
  timeoutMs?: number;
  /** How long connecting (starting a process, initializing) and listing may take. @default 20000 */
  connectTimeoutMs?: number;
  /** The longest JSON-RPC line a stdio server may write (a longer one is `MCP_PROTOCOL`). @default 4194304 */
  maxLineBytes?: number;
}

/** An MCP server's tools as a tool source for `defineAgent({ tools })`; `close()` ends its connections. */
export interface McpToolSet extends ToolSource, AsyncDisposable {
  /** The server's name in its tools' ids. */
  readonly name: string;
  /** What the server's tools are for (the manifest's description of the set). */
  readonly description: string;
  /** Closes every connection (stdio processes end); calls after it fail with `MCP_CLOSED`. */
  close(): Promise<void>;
}

/** Where a tool set's connections come from: one for every call on the host, one per thread in a sandbox. */
export interface McpConnections {
  readonly capabilities: CapabilityMap;
  /** The connection to list with for a source call; `undefined` when it cannot be had (outside a run). */
  forListing(args: ToolSourceArgs): McpConnection | undefined;
  /** The connection a tool call uses. */
  forCall(ctx: ToolExecuteContext<unknown, unknown, any>): McpConnection;
  /** The tools known for a thread without asking (outside a run). */
  known(threadId: string): McpToolDescription[] | undefined;
  close(): Promise<void>;
}

const NAME_LIMIT = 64;

/** Builds the tool set over `connections`; `mcpTools` of either entry point calls it. */
export function createMcpToolSet(options: {
  name: string;
  settings: McpToolsOptions;
  connections: McpConnections;
}): McpToolSet {
  const { name, settings, connections } = options;
  const timeoutMs = settings.timeoutMs ?? 60_000;
  const definitions = new Map<string, AnyToolDefinition>();

  async function needsApproval(tool: string, input: unknown): Promise<boolean> {
    const rule = settings.requireApproval ?? false;
    return typeof rule === "boolean" ? rule : (await rule({ tool, input })) === true;
  }

  function definitionOf(description: McpToolDescription): AnyToolDefinition {
    const key = JSON.stringify(description);
    const known = definitions.get(key);
    if (known) return known;
    const tool = description.name;
    const definition = defineTool({
      id: `mcp.${name}.${tool}`,
      description: description.description ?? description.title ?? tool,
      // the server's JSON Schema, as the model sees it; the server checks the input itself
      inputSchema: jsonSchema<Record<string, unknown>>(description.inputSchema as never),
      capabilities: connections.capabilities,
      execute: async (ctx) => {
        if (ctx.entry.type === "initial" && (await needsApproval(tool, ctx.input))) {
          return ctx.suspend({ type: "mcp-approval", server: name, tool, input: ctx.input });
        }
        if (ctx.entry.type === "resume" && (ctx.entry.resume as { approved?: unknown })?.approved === false) {
          return ctx.fail("The call was not approved.", { code: "DENIED" });
        }
        const result = await connections
          .forCall(ctx)
          .callTool({ name: tool, arguments: ctx.input ?? {}, signal: ctx.signal, timeoutMs })
          .catch((error: unknown) => {
            if (McpError.isInstance(error)) ctx.fail(error.message, { code: error.code });
            throw error;
          });
        if (result.isError) {
          ctx.fail(mcpResultText(result) || `mcp tool "${tool}" of server ${name} failed`, {
            code: "MCP_TOOL_FAILED",
          });
        }
        return mcpToolOutput(result);
      },
      toModelOutput: ({ output }) => mcpModelOutput(output),
    });
    definitions.set(key, definition);
    return definition;
  }

  function registrationOf(description: McpToolDescription): unknown {
    const tool = definitionOf(description);
    const { enabled } = settings;
    if (enabled === undefined) return tool;
    return {
      tool,
      enabled:
        typeof enabled === "boolean"
          ? enabled
          : (args: AgentResolverArgs) => enabled({ ...args, mcpTool: description.name }),
    };
  }

  return {
    kind: "pai.tool-source",
    name,
    description: settings.description ?? `The tools of the MCP server "${name}"`,
    capabilities: connections.capabilities,
    async tools(args) {
      const connection = connections.forListing(args);
      const listed = connection
        ? await connection.listTools({ signal: args.signal })
        : (connections.known(args.threadId) ?? []);
      const prefix = settings.prefix ?? args.key;
      return Object.fromEntries(
        listed.map((description) => [modelName(prefix, description.name), registrationOf(description)]),
      );
    },
    close: () => connections.close(),
    [Symbol.asyncDispose]: () => connections.close(),
  };
}

/** `<prefix>_<tool>` in the characters and length model providers take. */
function modelName(prefix: string, tool: string): string {
  const joined = `${prefix}_${tool}`.replace(/[^a-zA-Z0-9_-]/g, "_");
  return joined.length <= NAME_LIMIT ? joined : joined.slice(0, NAME_LIMIT);
}
