import type { Context } from "@opentelemetry/api";
import type { ToolEnd } from "../actions/tool-end.ts";
import type { ToolResultEvent } from "../agents/define-agent.ts";
import type { NormalizedRegistration } from "../agents/tool-registration.ts";
import type { JournalEntry } from "../threads/thread-store.ts";
import type { AnyToolDefinition } from "../tools/define-tool.ts";
import type { ToolSuspendSignal } from "../tools/tool-signals.ts";
import type { CallScope } from "./call-scope.ts";

/** A journal entry of a call that waited and was answered. */
export type AnsweredEntry = Extract<JournalEntry, { state: "answered" }>;

/** One call through the pipeline: the top-level call, or a call below it. */
export interface PipelineCall {
  definition: AnyToolDefinition;
  /** How hooks, errors and tool data name it: the registration name, or the path joined with `.`. */
  label: string;
  /** Names from the top-level call down to this call (`path[0]`: the top-level call's registration name). */
  path: string[];
  /** Its journal key (`""` for the top-level call). */
  key: string;
  input: unknown;
  /** Registrations whose `enabled` must hold: the top-level one, and an inner tool's own registration. */
  gates: readonly NormalizedRegistration[];
  /** The registration whose `mapContext` and `onOutput` the call uses, if any. */
  registration: NormalizedRegistration | undefined;
  /** The caller's context, for an inner tool without a `mapContext` of its own. */
  inherited: { context: unknown } | undefined;
  /** Inner calls validate their input here; the AI SDK validated the top-level call's. */
  validateInput: boolean;
  scope: CallScope;
  toolCallId: string;
  /** Set when the call waited and was answered. */
  answered: AnsweredEntry | undefined;
  /** The trace context of the call that made it (its caller's `pai.tool` span); a model's call has the active one. */
  traceParent?: Context | undefined;
}

/** How one call settled in the pipeline, before the model or its caller sees it. */
export type Settled =
  | { type: "output"; output: unknown }
  | {
      type: "error";
      message: string;
      kind: NonNullable<ToolResultEvent["error"]>["kind"];
      /** Why, for an inner caller: `DENIED`, `CANCELLED`, `TOOL_DISABLED`, a `ctx.fail` code. */
      code?: string | undefined;
      end?: ToolEnd;
    };

/** A call came out of the pipeline settled, or it did not settle because a call (it, or one below it) waits. */
export type PipelineOutcome = Settled | { type: "wait" };

/** A call whose `execute` runs: where its own inner calls (`ctx.tools`, `ctx.agents`) sit. */
export interface CallFrame {
  readonly call: PipelineCall;
  readonly context: unknown;
  /** Its `pai.tool` span's context: the parent of its inner calls' spans, wherever they are made from. */
  readonly traceContext: Context;
  /** The index of its next inner call. */
  next: number;
  /** What its own `ctx.suspend` threw. */
  suspended: ToolSuspendSignal | undefined;
}
