// @pai/mcp/sandbox: `mcpTools` with servers inside the conversation's sandbox too (needs @pai/sandbox).

export { type McpSandboxServer, type McpServer, mcpTools } from "./mcp-tools.ts";
export type { SandboxStdioServer } from "./sandbox-stdio-transport.ts";
