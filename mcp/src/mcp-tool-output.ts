import type { ToolResultOutput } from "@ai-sdk/provider-utils";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

/** One part of an MCP tool's result, as PAI stores it (the MCP content types, unchanged). */
export type McpContent = CallToolResult["content"][number];

/** What an MCP tool call returns in PAI: the server's content and, when it gave one, its structured content. */
export interface McpToolOutput {
  content: McpContent[];
  structuredContent?: Record<string, unknown>;
}

/** The stored output of a successful call. */
export function mcpToolOutput(result: CallToolResult): McpToolOutput {
  return {
    content: result.content ?? [],
    ...(result.structuredContent ? { structuredContent: result.structuredContent } : {}),
  };
}

/** The text of a result's text parts (what a failed call says). */
export function mcpResultText(result: CallToolResult): string {
  return (result.content ?? [])
    .map((part) => (part.type === "text" ? part.text : ""))
    .filter(Boolean)
    .join("\n");
}

/**
 * What the model sees of an output: structured content as JSON when the server gave it (its text content mirrors
 * it, per the MCP spec), otherwise the content as model content parts — text, images and audio as files, resources
 * as their text or a link.
 */
export function mcpModelOutput(output: McpToolOutput): ToolResultOutput {
  if (output.structuredContent) return { type: "json", value: output.structuredContent as never };
  const value = output.content.map((part) => {
    switch (part.type) {
      case "text":
        return { type: "text" as const, text: part.text };
      case "image":
      case "audio":
        return {
          type: "file" as const,
          mediaType: part.mimeType,
          data: { type: "data" as const, data: part.data },
        };
      case "resource":
        return {
          type: "text" as const,
          text: "text" in part.resource ? part.resource.text : `[resource ${part.resource.uri}]`,
        };
      case "resource_link":
        return { type: "text" as const, text: `[resource ${part.uri}${part.name ? ` (${part.name})` : ""}]` };
      default:
        return { type: "text" as const, text: JSON.stringify(part) };
    }
  });
  return { type: "content", value };
}
