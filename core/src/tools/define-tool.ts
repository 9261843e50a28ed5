import type { ToolResultOutput } from "@ai-sdk/provider-utils";
import type { z } from "zod";
import type { CapabilityMap } from "../capabilities/define-capability.ts";
import type {
  AnyToolDefinition,
  MaybePromise,
  ToModelOutputOptions,
  ToolDataChannels,
  ToolDataSchemas,
  ToolDefinition,
  ToolExecuteContext,
} from "./tool-context.ts";
import type { InferToolInput, ToolInputSchema } from "./tool-input-schema.ts";

// The declaration `defineTool` returns is typed beside the `ctx` its `execute` receives (tool-context.ts): each
// refers to the other (`ctx.tools` holds declarations), and one file keeps the pair free of an import cycle.
export type {
  AnyToolDefinition,
  InputOf,
  OutputOf,
  ToModelOutputOptions,
  ToolDefinition,
} from "./tool-context.ts";

type SchemaOutput<SCHEMA, FALLBACK> = SCHEMA extends z.ZodType ? z.output<SCHEMA> : FALLBACK;
type DataOf<SCHEMAS> = SCHEMAS extends ToolDataSchemas
  ? { [K in keyof SCHEMAS]: z.output<SCHEMAS[K]> }
  : ToolDataChannels;

export type ContextOf<T> =
  T extends ToolDefinition<any, any, infer CONTEXT, any, any, any, any, any> ? CONTEXT : never;
/** A tool's nested child tools (`defineTool({ tools })`), by key. */
export type ChildrenOf<T> =
  T extends ToolDefinition<any, any, any, any, any, any, any, infer CHILDREN> ? CHILDREN : never;

/** What `defineTool` accepts. */
export interface ToolOptions<
  INPUT_SCHEMA extends ToolInputSchema,
  OUTPUT,
  CONTEXT_SCHEMA extends z.ZodType | undefined,
  CAPABILITIES extends CapabilityMap,
  DATA_SCHEMAS extends ToolDataSchemas | undefined,
  SUSPEND_SCHEMA extends z.ZodType | undefined,
  RESUME_SCHEMA extends z.ZodType | undefined,
  CHILDREN extends Record<string, AnyToolDefinition> = {},
> {
  /** Stable wire identity. Give incompatible schemas distinct (or versioned) ids. */
  id: string;
  /** What the model reads to decide when to call the tool. */
  description: string;
  /** The input: a zod schema, or the AI SDK's `jsonSchema()` to hand the model a JSON Schema as is. */
  inputSchema: INPUT_SCHEMA;
  /** Validates every output before anything else sees it. */
  outputSchema?: z.ZodType<OUTPUT>;
  /** The context this tool needs. Without it the tool receives the agent's runtime context as is. */
  contextSchema?: CONTEXT_SCHEMA;
  /** Typed `ctx.data` channels: name → schema of each write. */
  data?: DATA_SCHEMAS;
  /** Capabilities the tool uses, e.g. `{ sandbox }`; the runtime provides their facades at `ctx.capabilities`. */
  capabilities?: CAPABILITIES;
  /** Schema of `ctx.suspend` payloads. */
  suspendSchema?: SUSPEND_SCHEMA;
  /** Schema of resume answers. */
  resumeSchema?: RESUME_SCHEMA;
  /** Child tools this tool calls as `ctx.tools.<key>(input)`: inputs and outputs validated, same call and context. */
  tools?: CHILDREN;
  /** Runs the tool. Leave it out for a client-executed tool. */
  execute?: (
    ctx: ToolExecuteContext<
      InferToolInput<INPUT_SCHEMA>,
      SchemaOutput<CONTEXT_SCHEMA, any>,
      CAPABILITIES,
      DataOf<DATA_SCHEMAS>,
      SchemaOutput<SUSPEND_SCHEMA, unknown>,
      SchemaOutput<RESUME_SCHEMA, unknown>,
      CHILDREN
    >,
  ) => MaybePromise<OUTPUT>;
  /** Changes only what the model sees of a successful result; the thread and the UI keep the raw output. */
  toModelOutput?: (
    options: ToModelOutputOptions<InferToolInput<INPUT_SCHEMA>, NoInfer<OUTPUT>>,
  ) => MaybePromise<ToolResultOutput>;
}

/**
 * Declares a tool. Pure: returns a typed declaration and does no I/O.
 * @example
 * export const createTask = defineTool({
 *   id: "createTask",
 *   description: "Create a workspace task",
 *   inputSchema: z.object({ title: z.string() }),
 *   outputSchema: z.object({ taskId: z.string() }),
 *   execute: async (ctx) => ({ taskId: await ctx.context.tasks.create(ctx.input.title) }),
 * });
 */
export function defineTool<
  INPUT_SCHEMA extends ToolInputSchema,
  OUTPUT,
  CONTEXT_SCHEMA extends z.ZodType | undefined = undefined,
  CAPABILITIES extends CapabilityMap = {},
  DATA_SCHEMAS extends ToolDataSchemas | undefined = undefined,
  SUSPEND_SCHEMA extends z.ZodType | undefined = undefined,
  RESUME_SCHEMA extends z.ZodType | undefined = undefined,
  CHILDREN extends Record<string, AnyToolDefinition> = {},
>(
  options: ToolOptions<
    INPUT_SCHEMA,
    OUTPUT,
    CONTEXT_SCHEMA,
    CAPABILITIES,
    DATA_SCHEMAS,
    SUSPEND_SCHEMA,
    RESUME_SCHEMA,
    CHILDREN
  >,
): ToolDefinition<
  InferToolInput<INPUT_SCHEMA>,
  OUTPUT,
  SchemaOutput<CONTEXT_SCHEMA, any>,
  CAPABILITIES,
  DataOf<DATA_SCHEMAS>,
  SchemaOutput<SUSPEND_SCHEMA, unknown>,
  SchemaOutput<RESUME_SCHEMA, unknown>,
  CHILDREN
> {
  return {
    kind: "pai.tool",
    id: options.id,
    description: options.description,
    inputSchema: options.inputSchema as never,
    outputSchema: options.outputSchema,
    contextSchema: options.contextSchema as never,
    dataSchemas: options.data,
    suspendSchema: options.suspendSchema as never,
    resumeSchema: options.resumeSchema as never,
    capabilities: (options.capabilities ?? {}) as CAPABILITIES,
    tools: options.tools ?? ({} as CHILDREN),
    execute: options.execute as never,
    toModelOutput: options.toModelOutput as never,
  };
}

/** True for a value `defineTool` returned. */
export function isToolDefinition(value: unknown): value is AnyToolDefinition {
  return typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === "pai.tool";
}
