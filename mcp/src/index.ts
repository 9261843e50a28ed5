// @pai/mcp: an MCP server's tools as PAI tools.
export type { McpHostServer, McpHttpServer, McpStdioServer } from "./host-transport.ts";
export { McpError, type McpErrorCode } from "./mcp-error.ts";
export type { McpContent, McpToolOutput } from "./mcp-tool-output.ts";
export type { McpToolSet, McpToolsOptions } from "./mcp-tool-set.ts";
export { mcpTools } from "./mcp-tools.ts";
