import type { RegisteredAgent } from "../agents/create-pai.ts";
import type { AgentResolverArgs } from "../agents/define-agent.ts";
import type { RunTelemetry } from "../telemetry/run-telemetry.ts";
import type { PendingActionRecord, ThreadStore } from "../threads/thread-store.ts";
import type { ToolFiles } from "../tools/tool-context.ts";
import { redactedMessage } from "./redaction.ts";
import type { RunTranscript, StartingCall } from "./run-transcript.ts";
import type { SubagentRunner } from "./subagent-runner.ts";

/** Why a run stopped early. */
export type RunStopReason =
  | { type: "cancelled" }
  | { type: "failed"; error: unknown }
  | { type: "suspended" };

/** Per-run state shared by the loop and the tool runners. */
export interface RunState {
  agent: RegisteredAgent;
  runId: string;
  threadId: string;
  store: ThreadStore;
  resolverArgs: AgentResolverArgs<unknown, unknown>;
  /** Aborts everything the run started: model call, tools, provisioning. */
  controller: AbortController;
  /** Set once: the reason the run stops before the model finishes. */
  stopReason: RunStopReason | undefined;
  /** Pending actions created during this run, and their tool calls (whose SDK result is a placeholder). */
  pendingActions: PendingActionRecord[];
  pendingToolCallIds: Set<string>;
  /** The run's messages and stream: PAI's own chunks (`data-*` parts, errors) go here, and calls PAI ended. */
  transcript: RunTranscript;
  /** Reports an unplanned error to `onRuntimeError` (never throws). */
  reportError(
    error: unknown,
    info: { phase: "tool" | "on-output" | "model" | "run"; toolName?: string; toolCallId?: string },
  ): Promise<void>;
  /** `ctx.files`: the files attached to this thread's messages. */
  files: ToolFiles;
  /** Subagent runs (`ctx.agents.run`) on behalf of this run's caller. */
  subagents: SubagentRunner;
  /**
   * Stores the thread with `call` (starting to execute) on the reply if the call runs for more than a moment;
   * call the returned function when it ends. Never blocks the call.
   */
  checkpoint(call: StartingCall): () => void;
  /** Stores the thread with `call` on the reply now (rejects when the write fails). */
  storeCall(call: StartingCall): Promise<void>;
  /** Capability facades for a tool call, provisioned lazily by the capability layer. */
  capabilitiesFor(capabilityNames: Record<string, string>): Record<string, unknown>;
  /** The run's span (`pai.run`) and the context its calls run in. */
  telemetry: RunTelemetry;
}

/** Stops the run with `reason` unless it already stopped. */
export function stopRun(state: RunState, reason: RunStopReason): void {
  if (state.stopReason) return;
  state.stopReason = reason;
  if (reason.type === "failed")
    state.transcript.write({ type: "error", errorText: redactedMessage(reason.error) });
  state.controller.abort(reason);
}
