import { type JSONSchema7, type Schema, zodSchema } from "ai";
import { z } from "zod";

/**
 * What a tool's `inputSchema` may be: a zod schema (the usual case; its JSON Schema is generated), or the AI SDK's
 * `jsonSchema(...)` — a JSON Schema given as is, for tools whose contract comes from elsewhere (an MCP server's,
 * an OpenAPI operation's). The model sees that JSON Schema unchanged; input is checked with its `validate`, when it
 * has one.
 */
export type ToolInputSchema<INPUT = any> = z.ZodType<INPUT> | Schema<INPUT>;

/** The input type a {@link ToolInputSchema} describes. */
export type InferToolInput<SCHEMA> = SCHEMA extends z.ZodType
  ? z.output<SCHEMA>
  : SCHEMA extends Schema<infer INPUT>
    ? INPUT
    : never;

const aiSchemas = new WeakMap<object, Schema<unknown>>();

function isZod(schema: ToolInputSchema): schema is z.ZodType {
  return "_zod" in schema;
}

/** The AI SDK schema of a tool's input, built once per schema so a zod schema's JSON Schema is computed once. */
export function toolInputAiSchema(schema: ToolInputSchema): Schema<unknown> {
  if (!isZod(schema)) return schema as Schema<unknown>;
  let cached = aiSchemas.get(schema);
  if (!cached) {
    cached = zodSchema(schema as z.ZodType<unknown>) as Schema<unknown>;
    aiSchemas.set(schema, cached);
  }
  return cached;
}

/**
 * The JSON Schema of a tool's input (the output side of a zod schema), for manifests and generated signatures:
 * `{}` when a zod schema cannot be represented or a `jsonSchema()` is given lazily (as a promise).
 */
export function toolInputJsonSchema(schema: ToolInputSchema): JSONSchema7 {
  if (!isZod(schema)) {
    const json = (schema as Schema<unknown>).jsonSchema;
    return typeof (json as PromiseLike<unknown>).then === "function" ? {} : (json as JSONSchema7);
  }
  try {
    return z.toJSONSchema(schema, { unrepresentable: "any", io: "output" }) as JSONSchema7;
  } catch {
    return {};
  }
}

/** Checks `value` against a tool's input schema: the parsed input, or a readable reason it does not fit. */
export async function parseToolInput(
  schema: ToolInputSchema,
  value: unknown,
): Promise<{ success: true; data: unknown } | { success: false; message: string }> {
  if (isZod(schema)) {
    const parsed = await schema.safeParseAsync(value);
    return parsed.success
      ? { success: true, data: parsed.data }
      : { success: false, message: z.prettifyError(parsed.error) };
  }
  const { validate } = schema as Schema<unknown>;
  if (!validate) return { success: true, data: value };
  const result = await validate(value);
  return result.success
    ? { success: true, data: result.value }
    : { success: false, message: result.error.message };
}
