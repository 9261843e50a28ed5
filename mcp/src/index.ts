// @pai/mcp: an MCP server's tools as PAI tools.
export {};
