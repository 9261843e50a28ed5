import type { LanguageModel, ModelMessage } from "ai";
import type { z } from "zod";
import type { AnyToolDefinition, ContextOf, InputOf, OutputOf } from "../tools/define-tool.ts";
import type { ToolSource } from "./tool-source.ts";

type MaybePromise<T> = T | PromiseLike<T>;

/** What a run is authorized for: its thread and the caller's identity key. */
export interface RunScope {
  threadId: string;
  /** A stable key of the caller's identity (owner of threads, key of `user` capability leases). */
  identityKey: string;
}

/** The arguments every agent behaviour resolver (`enabled`, `mapContext`, `onOutput`, ...) receives. */
export interface AgentResolverArgs<RUNTIME_CONTEXT = unknown, IDENTITY = unknown> {
  runtimeContext: RUNTIME_CONTEXT;
  identity: IDENTITY;
  /** Untrusted data from the client. Never an authorization source. */
  clientData: unknown;
  threadId: string;
  signal: AbortSignal;
}

/** The arguments of the agent's `runtimeContext` factory. */
export interface RuntimeContextArgs<IDENTITY = unknown> {
  identity: IDENTITY;
  scope: RunScope;
  threadId: string;
  clientData: unknown;
  signal: AbortSignal;
}

/** What `onOutput` receives: the resolver arguments plus the call, typed from the tool's own schemas. */
export interface ToolOutputEvent<TOOL, RUNTIME_CONTEXT, IDENTITY>
  extends AgentResolverArgs<RUNTIME_CONTEXT, IDENTITY> {
  input: InputOf<TOOL>;
  output: OutputOf<TOOL>;
  /** `name` as this agent registered the tool; `id` is its wire identity. */
  tool: { name: string; id: string };
  /** The top-level call this output belongs to (the model's call, for a nested one). */
  call: { toolCallId: string };
  /**
   * Where the call was made: `[name]` for the model's own call; below a top-level call (a nested tool, a code-mode
   * program's tool call) the names from that call down, e.g. `["code", "openDocument"]`.
   */
  path: string[];
}

/** A tool registration with options. `mapContext` is required when the runtime context does not fit the tool. */
export interface ToolRegistrationConfig<TOOL, RUNTIME_CONTEXT = any, IDENTITY = any> {
  tool: TOOL;
  /**
   * Whether the model may see and call the tool; resolved before every model step and rechecked before each call.
   * A call made below another tool (`ctx.tools`, code mode) runs only while this holds too, and so does every
   * call below this tool's own calls. @default true
   */
  enabled?: boolean | ((args: AgentResolverArgs<RUNTIME_CONTEXT, IDENTITY>) => MaybePromise<boolean>);
  /** Projects the agent's runtime context onto the tool's `contextSchema` (for its nested calls too). */
  mapContext?: (args: AgentResolverArgs<RUNTIME_CONTEXT, IDENTITY>) => MaybePromise<NoInfer<ContextOf<TOOL>>>;
  /**
   * Observes each settled, validated output; awaited before the model's next step; its return value is ignored.
   * It also observes the tool's calls made below another call (`ctx.tools`, code mode), with their `path`.
   */
  onOutput?: (event: ToolOutputEvent<NoInfer<TOOL>, RUNTIME_CONTEXT, IDENTITY>) => unknown;
}

/** Direct registration type-checks only when the runtime context is assignable to the tool's context. */
type DirectRegistration<TOOL, RUNTIME_CONTEXT> = [RUNTIME_CONTEXT] extends [ContextOf<TOOL>] ? TOOL : never;
/** `mapContext` becomes required when the runtime context is not assignable to the tool's context. */
type RequiredMapContext<TOOL, RUNTIME_CONTEXT> = [RUNTIME_CONTEXT] extends [ContextOf<TOOL>]
  ? unknown
  : { mapContext: (...args: never[]) => unknown };
type RegistrationCheck<ENTRY, RUNTIME_CONTEXT> = ENTRY extends ToolSource
  ? ToolSource
  : ENTRY extends { tool: infer TOOL }
    ? RequiredMapContext<TOOL, RUNTIME_CONTEXT>
    : DirectRegistration<ENTRY, RUNTIME_CONTEXT>;

/**
 * The `tools` map of an agent: registration key (the name the model sees) → tool or configured registration, or a
 * tool source (`defineToolSource`) whose tools are resolved per run and per step.
 */
export type AgentToolRegistrations<TOOLS, RUNTIME_CONTEXT, IDENTITY> = {
  [K in keyof TOOLS]: TOOLS[K] | ToolRegistrationConfig<TOOLS[K], RUNTIME_CONTEXT, IDENTITY> | ToolSource;
};

/** Checked after inference: refuses direct registrations and configs without `mapContext` whose context does not fit. */
export type CheckedToolRegistrations<ENTRIES, RUNTIME_CONTEXT> = {
  [K in keyof ENTRIES]: RegistrationCheck<ENTRIES[K], RUNTIME_CONTEXT>;
};

/** One settled tool result as `lifecycle.afterToolResult` sees it. */
export interface ToolResultEvent {
  /** The registration key; for a call below another one, its path joined with `.` (`"code.add"`). */
  name: string;
  toolId: string;
  /** The top-level call (the model's). */
  toolCallId: string;
  /** Names from the top-level call down to this one: `[name]` for the model's own call. */
  path: string[];
  input: unknown;
  /** The output, when the call produced one. */
  output: unknown;
  /** Set when the call failed: planned (`ctx.fail`), thrown, or invalid output. */
  error?: { message: string; kind: "planned" | "thrown" | "invalid-output" };
}

/** What `afterToolResult` may return: nothing (keep), a replacement output, or an error for the model. */
export type ToolResultOverride = undefined | { output: unknown } | { error: string };

export interface AgentLifecycle<RUNTIME_CONTEXT, IDENTITY> {
  /** Sees every tool result before `onOutput` and the model; may turn a failure into an output or the reverse. */
  afterToolResult?: (
    event: ToolResultEvent,
    args: AgentResolverArgs<RUNTIME_CONTEXT, IDENTITY>,
  ) => MaybePromise<ToolResultOverride | void>;
}

/** Where a runtime error happened and the ids around it. */
export interface RuntimeErrorInfo {
  agentId: string;
  threadId: string;
  runId: string;
  toolName?: string;
  toolCallId?: string;
  phase: "tool" | "on-output" | "model" | "run";
}

/** What `defineAgent` accepts. */
export interface AgentOptions<IDENTITY_SCHEMA extends z.ZodType | undefined, RUNTIME_CONTEXT, TOOLS> {
  /** Display name. @default the registry key */
  name?: string;
  /** The model. May be left out when the runtime supplies a default. */
  model?: LanguageModel;
  /** Schema of the caller's identity; a bad identity is refused before anything runs. */
  identity?: IDENTITY_SCHEMA;
  /** Builds the agent's context once per run. */
  runtimeContext?: (
    args: RuntimeContextArgs<IdentityOf<IDENTITY_SCHEMA>>,
  ) => RUNTIME_CONTEXT | Promise<RUNTIME_CONTEXT>;
  /** System instructions, fixed or per run. */
  instructions?:
    | string
    | ((args: AgentResolverArgs<RUNTIME_CONTEXT, IdentityOf<IDENTITY_SCHEMA>>) => MaybePromise<string>);
  tools?: AgentToolRegistrations<TOOLS, RUNTIME_CONTEXT, IdentityOf<IDENTITY_SCHEMA>>;
  lifecycle?: AgentLifecycle<RUNTIME_CONTEXT, IdentityOf<IDENTITY_SCHEMA>>;
  /** Receives every unplanned error with the real error; the client only sees a redacted message. */
  onRuntimeError?: (error: unknown, info: RuntimeErrorInfo) => void | PromiseLike<void>;
  /** Upper bound on model steps per run. @default 20 */
  maxSteps?: number;
  /** Extra per-step settings, passed to `streamText`'s `prepareStep`. */
  prepareStep?: (options: {
    stepNumber: number;
    messages: ModelMessage[];
  }) => MaybePromise<{ system?: string } | undefined>;
}

type IdentityOf<SCHEMA> = SCHEMA extends z.ZodType ? z.output<SCHEMA> : any;

/** An agent declaration. */
export interface AgentDefinition<IDENTITY = any, RUNTIME_CONTEXT = any, TOOLS = Record<string, unknown>> {
  readonly kind: "pai.agent";
  readonly name: string | undefined;
  readonly model: LanguageModel | undefined;
  readonly identitySchema: z.ZodType<IDENTITY> | undefined;
  readonly runtimeContext:
    | ((args: RuntimeContextArgs<IDENTITY>) => MaybePromise<RUNTIME_CONTEXT>)
    | undefined;
  readonly instructions:
    | string
    | ((args: AgentResolverArgs<RUNTIME_CONTEXT, IDENTITY>) => MaybePromise<string>)
    | undefined;
  readonly tools: TOOLS;
  readonly lifecycle: AgentLifecycle<RUNTIME_CONTEXT, IDENTITY>;
  readonly onRuntimeError: ((error: unknown, info: RuntimeErrorInfo) => void | PromiseLike<void>) | undefined;
  readonly maxSteps: number;
  readonly prepareStep: AgentOptions<undefined, RUNTIME_CONTEXT, TOOLS>["prepareStep"];
}

export type AnyAgentDefinition = AgentDefinition<any, any, any>;

/**
 * Declares an agent. Pure: no I/O. Tools register directly (`{ searchDocs }`) when the runtime context fits
 * their `contextSchema`, otherwise as `{ tool, mapContext }` — the type checker enforces it.
 * @example
 * export const agent = defineAgent({
 *   identity: z.object({ userId: z.string() }),
 *   runtimeContext: async ({ identity }) => ({ userId: identity.userId }),
 *   tools: { searchDocs },
 * });
 */
export function defineAgent<
  IDENTITY_SCHEMA extends z.ZodType | undefined = undefined,
  RUNTIME_CONTEXT = any,
  TOOLS extends Record<string, AnyToolDefinition> = {},
  ENTRIES = unknown,
>(
  options: AgentOptions<IDENTITY_SCHEMA, RUNTIME_CONTEXT, TOOLS> & {
    tools?: ENTRIES & NoInfer<CheckedToolRegistrations<ENTRIES, RUNTIME_CONTEXT>>;
  },
): AgentDefinition<
  IdentityOf<IDENTITY_SCHEMA>,
  RUNTIME_CONTEXT,
  AgentToolRegistrations<TOOLS, RUNTIME_CONTEXT, IdentityOf<IDENTITY_SCHEMA>>
> {
  return {
    kind: "pai.agent",
    name: options.name,
    model: options.model,
    identitySchema: options.identity as never,
    runtimeContext: options.runtimeContext,
    instructions: options.instructions,
    tools: (options.tools ?? {}) as never,
    lifecycle: options.lifecycle ?? {},
    onRuntimeError: options.onRuntimeError,
    maxSteps: options.maxSteps ?? 20,
    prepareStep: options.prepareStep,
  };
}
