import { type AnyToolDefinition, toolInputJsonSchema } from "@pai/core";
import { z } from "zod";

/** A TypeScript-like signature per tool, from its JSON Schemas: what the model reads to write its program. */
export function toolSignatures(tools: Record<string, AnyToolDefinition>): string {
  return Object.entries(tools)
    .map(([name, tool]) => {
      const input = typeOf(toolInputJsonSchema(tool.inputSchema) as JsonSchema);
      const output = tool.outputSchema
        ? typeOf(z.toJSONSchema(tool.outputSchema, { unrepresentable: "any" }) as JsonSchema)
        : "unknown";
      return `/** ${tool.description} */\ntools.${name}(input: ${input}): Promise<${output}>`;
    })
    .join("\n");
}

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  const?: unknown;
};

function typeOf(schema: JsonSchema): string {
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((value) => JSON.stringify(value)).join(" | ");
  if (schema.anyOf) return schema.anyOf.map(typeOf).join(" | ");
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case "object": {
      const required = new Set(schema.required ?? []);
      const fields = Object.entries(schema.properties ?? {}).map(
        ([key, value]) => `${key}${required.has(key) ? "" : "?"}: ${typeOf(value)}`,
      );
      return `{ ${fields.join("; ")} }`;
    }
    case "array":
      return `Array<${schema.items ? typeOf(schema.items) : "unknown"}>`;
    case "integer":
      return "number";
    case "string":
    case "number":
    case "boolean":
    case "null":
      return type;
    default:
      return "unknown";
  }
}
