import type { ToolResultOutput } from "@ai-sdk/provider-utils";
import type { z } from "zod";
import type { CapabilityFacades, CapabilityMap } from "../capabilities/define-capability.ts";
import type { ToolDataRecord } from "../threads/thread-store.ts";
import type { ToolInputSchema } from "./tool-input-schema.ts";

// A tool's two types: the declaration (`ToolDefinition`, what `defineTool` returns) and the `ctx` its `execute`
// receives (`ToolExecuteContext`). They refer to each other — `execute` takes the context, and `ctx.tools` holds
// the nested declarations — so they live in this one file; define-tool.ts builds declarations on top of it.

/** A value, or a promise of it: what a tool's functions may return. */
export type MaybePromise<T> = T | PromiseLike<T>;

/** Zod schemas of a tool's data channels. */
export type ToolDataSchemas = Record<string, z.ZodType>;

/** The argument of `toModelOutput`, the AI SDK's signature. */
export interface ToModelOutputOptions<INPUT, OUTPUT> {
  toolCallId: string;
  input: INPUT;
  output: OUTPUT;
}

/**
 * A tool declaration as `defineTool` returns it. The type parameters carry the inferred contract:
 * `INPUT`/`OUTPUT` from the schemas (or `execute`), `CONTEXT` from `contextSchema` (`any` without one).
 */
export interface ToolDefinition<
  INPUT = any,
  OUTPUT = any,
  CONTEXT = any,
  CAPABILITIES extends CapabilityMap = CapabilityMap,
  DATA extends ToolDataChannels = ToolDataChannels,
  SUSPEND = any,
  RESUME = any,
  CHILDREN extends Record<string, AnyToolDefinition> = Record<string, AnyToolDefinition>,
> {
  readonly kind: "pai.tool";
  /** The stable wire identity, recorded on every stored tool part. Aliases reuse it. */
  readonly id: string;
  readonly description: string;
  /** A zod schema, or the AI SDK's `jsonSchema()` (see {@link ToolInputSchema}). */
  readonly inputSchema: ToolInputSchema<INPUT>;
  readonly outputSchema: z.ZodType<OUTPUT> | undefined;
  readonly contextSchema: z.ZodType<CONTEXT> | undefined;
  readonly dataSchemas: ToolDataSchemas | undefined;
  readonly suspendSchema: z.ZodType<SUSPEND> | undefined;
  readonly resumeSchema: z.ZodType<RESUME> | undefined;
  readonly capabilities: CAPABILITIES;
  /** Nested child tools, callable from `execute` as `ctx.tools.<key>(input)`. */
  readonly tools: CHILDREN;
  /** Absent for client-executed tools: the client answers with the output. (Method syntax keeps declarations assignable to `AnyToolDefinition`.) */
  execute?(
    ctx: ToolExecuteContext<INPUT, CONTEXT, CAPABILITIES, DATA, SUSPEND, RESUME>,
  ): MaybePromise<OUTPUT>;
  toModelOutput?(options: ToModelOutputOptions<INPUT, OUTPUT>): MaybePromise<ToolResultOutput>;
}

/** Any tool declaration. */
export type AnyToolDefinition = ToolDefinition<any, any, any, any, any, any, any, Record<string, any>>;
export type InputOf<T> =
  T extends ToolDefinition<infer INPUT, any, any, any, any, any, any, any> ? INPUT : never;
export type OutputOf<T> =
  T extends ToolDefinition<any, infer OUTPUT, any, any, any, any, any, any> ? OUTPUT : never;

/**
 * `ctx.tools`: each nested child tool as a function of its input. A call runs the same pipeline as the model's
 * calls (`enabled`, schemas, context, `afterToolResult`, `onOutput`) and resolves with the output. When it ends
 * without one it rejects with an `Error` whose `message` is what the model would read and whose `code` says why
 * (`DENIED`, `CANCELLED`, `TOOL_DISABLED`, `INVALID_INPUT`, or the child's `ctx.fail` code); left uncaught, that
 * fails this call the same planned way. When it waits for a person (its own `ctx.suspend` or one below it) it
 * rejects with a suspension (`isToolSuspension`): this whole call becomes the thread's pending action, and once
 * answered `execute` runs again from its start, calls that settled before answered from the call's journal
 * without running, so make the same calls in the same order up to the one that waited.
 */
export type NestedTools<CHILDREN> = {
  readonly [K in keyof CHILDREN]: (input: InputOf<CHILDREN[K]>) => Promise<OutputOf<CHILDREN[K]>>;
};

/** Where a tool call sits: its thread, run and call. */
export interface ToolCallLocation {
  threadId: string;
  runId: string;
  toolCallId: string;
  /** The registration key the model used. */
  toolName: string;
}

/** How `execute` was entered: first call, or resumed after `ctx.suspend`. */
export type ToolEntry<RESUME = unknown> =
  | { type: "initial" }
  | { type: "resume"; name: string; resume: RESUME };

/** Typed data channels a tool declares: channel name → payload type. */
export type ToolDataChannels = Record<string, unknown>;

/** One earlier write on a tool-data channel, as `ctx.data.list()` returns it. */
export interface ToolDataEntry<CHANNEL extends string = string, DATA = unknown> {
  channel: CHANNEL;
  data: DATA;
  toolCallId: string;
  seq: number;
  createdAt: number;
}

/** `ctx.data`: typed progress channels streamed to the client as `data-*` parts and stored on the thread. */
export interface ToolDataAccess<DATA extends ToolDataChannels> {
  /** Streams `data` on `channel` to the client (as a `data-<channel>` part) and stores it on the thread. */
  write<CHANNEL extends keyof DATA & string>(channel: CHANNEL, data: DATA[CHANNEL]): Promise<void>;
  /** Earlier writes on this thread, oldest first; `toolCallId` narrows to one call (default: every call of this tool). */
  list<CHANNEL extends keyof DATA & string>(
    channel: CHANNEL,
    options?: { toolCallId?: string },
  ): Promise<Array<ToolDataEntry<CHANNEL, DATA[CHANNEL]>>>;
}

/** `ctx.files`: files that belong to this thread. */
export interface ToolFiles {
  /** Files attached to the thread's messages, oldest first. */
  list(): Promise<ThreadFile[]>;
  /** The bytes of one file, or `null` when the thread has no such file. */
  read(fileId: string): Promise<Uint8Array | null>;
}

/** A file attached to a message of the thread. */
export interface ThreadFile {
  /** `<messageId>:<part index>`. */
  id: string;
  name: string | undefined;
  mediaType: string;
  url: string;
}

/** `ctx.agents`: run another registered agent as a subagent. */
export interface ToolAgents {
  /**
   * Runs agent `agentId` on a fresh thread with `prompt` as the user message and returns its final text. When a
   * tool of the subagent waits for a person, its thread suspends and this call waits as a nested call does: the
   * calling thread gets one pending action (its path goes on with `agentId` and the subagent's path), and its
   * answer continues the subagent, then this call, which gets the subagent's result.
   */
  run(options: {
    agentId: string;
    prompt: string;
  }): Promise<{ text: string; status: string; runId: string; threadId: string }>;
}

/** Options of `ctx.fail`. */
export interface ToolFailOptions {
  /** A short machine-readable reason the model and client see beside the message. */
  code?: string;
}

/** Options of `ctx.suspend`. */
export interface ToolSuspendOptions {
  /** Names the suspension point, so a resume is routed to the right place. @default "default" */
  name?: string;
}

/** Everything `execute` receives. There is no `identity`: what a tool knows of the caller comes through `context`. */
export interface ToolExecuteContext<
  INPUT = unknown,
  CONTEXT = unknown,
  CAPABILITIES extends CapabilityMap = CapabilityMap,
  DATA extends ToolDataChannels = ToolDataChannels,
  SUSPEND = unknown,
  RESUME = unknown,
  CHILDREN extends Record<string, AnyToolDefinition> = Record<string, AnyToolDefinition>,
> {
  /** Parsed `inputSchema`. */
  input: INPUT;
  /** The tool's context: the agent's `runtimeContext`, or what `mapContext` made of it. */
  context: CONTEXT;
  /** Fires when the user hits Stop or the run is cancelled. */
  signal: AbortSignal;
  thread: ToolCallLocation;
  /** The `createPai` registry key of the agent running this call. */
  agentId: string;
  entry: ToolEntry<RESUME>;
  /** A planned failure: the model sees `message`; it is not reported as a runtime error. */
  fail(message: string, options?: ToolFailOptions): never;
  /** Ends this step with a durable pending action that waits for an answer. */
  suspend(payload: SUSPEND, options?: ToolSuspendOptions): never;
  /** Earlier suspend payloads of this call, oldest first. */
  suspendHistory: SUSPEND[];
  data: ToolDataAccess<DATA>;
  files: ToolFiles;
  capabilities: CapabilityFacades<CAPABILITIES>;
  /** Nested child tools declared on this definition (`defineTool({ tools: { child } })`). */
  tools: NestedTools<CHILDREN>;
  agents: ToolAgents;
}

export type { ToolDataRecord };
