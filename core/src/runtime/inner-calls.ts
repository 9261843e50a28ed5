import { context } from "@opentelemetry/api";
import { hashInput } from "../actions/input-hash.ts";
import type { PendingActionAnswer } from "../actions/pending-action-answer.ts";
import type { NormalizedRegistration } from "../agents/tool-registration.ts";
import { PaiError } from "../errors/pai-error.ts";
import type { JournalEntry, JournalOutcome } from "../threads/thread-store.ts";
import type { AnyToolDefinition } from "../tools/define-tool.ts";
import { ToolFailSignal } from "../tools/tool-signals.ts";
import type { CallScope } from "./call-scope.ts";
import type { CallFrame, PipelineCall, PipelineOutcome, Settled } from "./pipeline-call.ts";
import { GENERIC_TOOL_ERROR, redactedMessage } from "./redaction.ts";
import { allEnabled } from "./resolve-enabled.ts";
import type { RunState } from "./run-state.ts";
import type { SubagentOutcome } from "./subagent-runner.ts";

/** What `ctx.agents.run` resolves with: the subagent's run as it ended. */
type SubagentResult = Extract<SubagentOutcome, { type: "ended" }>["result"];

/**
 * The calls a running `execute` makes below itself: `ctx.tools.<key>(input)` and `ctx.agents.run(...)`. Each takes
 * its caller's next journal key. One the journal holds as settled is answered from it without running again; any
 * other runs (a nested tool through the pipeline, a subagent as a run of its own) and is journaled as it settles or
 * waits. A call that does not match its journal entry makes the top-level call diverge (`JOURNAL_DIVERGED`).
 */
export interface InnerCalls {
  /** `ctx.tools.<childKey>(input)` of `frame`. */
  tool(frame: CallFrame, childKey: string, child: AnyToolDefinition, input: unknown): Promise<unknown>;
  /** `ctx.agents.run` of `frame`: a subagent run as an inner call; its wait is the parent's pending action. */
  agent(frame: CallFrame, options: { agentId: string; prompt: string }): Promise<SubagentResult>;
}

/** Creates the inner calls of one run; `runPipeline` runs a nested tool's call (the pipeline every call runs). */
export function createInnerCalls(options: {
  state: RunState;
  runPipeline(call: PipelineCall): Promise<PipelineOutcome>;
}): InnerCalls {
  const { state, runPipeline } = options;
  const signal = state.controller.signal;

  /** Starts `frame`'s next inner call, unless a call waits or the run diverged; tracked until it settles. */
  function start<RESULT>(frame: CallFrame, run: (key: string) => Promise<RESULT>): Promise<RESULT> {
    const { scope } = frame.call;
    const key = nextKey(frame);
    const blocked = scope.blocked();
    if (blocked) return Promise.reject(blocked);
    return scope.track(run(key));
  }

  async function runTool(
    frame: CallFrame,
    key: string,
    path: string[],
    child: AnyToolDefinition,
    input: unknown,
  ): Promise<unknown> {
    const { scope, toolCallId } = frame.call;
    const inputHash = hashInput(input);
    const recorded = journalEntryFor(scope, key, path, child.id, inputHash, toolCallId);
    if (recorded?.state === "settled") return replay(recorded.outcome);
    const own = registrationOf(state, child.id);
    const outcome = await runPipeline({
      definition: child,
      label: path.join("."),
      path,
      key,
      input,
      gates: own ? [...frame.call.gates, own] : frame.call.gates,
      registration: own,
      inherited: own?.mapContext ? undefined : { context: frame.context },
      validateInput: true,
      scope,
      toolCallId,
      answered: recorded?.state === "answered" ? recorded : undefined,
      traceParent: frame.traceContext,
    });
    if (outcome.type === "wait") {
      const wait = scope.wait!;
      if (wait.key === key) {
        scope.journal.put({
          key,
          toolId: child.id,
          inputHash,
          state: "waiting",
          name: wait.name,
          suspendHistory: wait.suspendHistory,
        });
      }
      throw wait.signal;
    }
    const settled = journalOutcomeOf(outcome);
    scope.journal.put({ key, toolId: child.id, inputHash, state: "settled", outcome: settled });
    return replay(settled);
  }

  async function runSubagent(
    frame: CallFrame,
    key: string,
    { agentId, prompt }: { agentId: string; prompt: string },
  ): Promise<SubagentResult> {
    const { scope, toolCallId } = frame.call;
    const path = [...frame.call.path, agentId];
    const toolId = `agent:${agentId}`;
    const inputHash = hashInput({ agentId, prompt });
    const recorded = journalEntryFor(scope, key, path, toolId, inputHash, toolCallId);
    if (recorded?.state === "settled") return replay(recorded.outcome) as never;
    if (!(await allEnabled(frame.call.gates, state.resolverArgs))) {
      throw new ToolFailSignal(`The tool "${frame.call.label}" is not available.`, "TOOL_DISABLED");
    }
    let outcome: SubagentOutcome;
    try {
      // The subagent's run span sits below its caller's, even for a call a code-mode program made.
      outcome = await context.with(frame.traceContext, () =>
        recorded?.subagent
          ? state.subagents.resume({
              wait: recorded.subagent,
              answer: recorded.state === "answered" ? (recorded.answer as PendingActionAnswer) : undefined,
              signal,
            })
          : state.subagents.start({ agentId, prompt, signal }),
      );
    } catch (error) {
      if (signal.aborted) throw error;
      await state.reportError(error, { phase: "tool", toolName: path.join("."), toolCallId });
      throw new ToolFailSignal(PaiError.isInstance(error) ? redactedMessage(error) : GENERIC_TOOL_ERROR);
    }
    if (outcome.type === "waiting") {
      const { action } = outcome;
      const wait = scope.waitFor({
        key,
        path: [...path, ...(action.inner?.path ?? [action.toolName])],
        toolId: action.inner?.toolId ?? action.toolId,
        input: action.inner?.input ?? action.input,
        kind: action.kind,
        name: action.name ?? "default",
        payload: action.payload,
        suspendHistory: action.suspendHistory,
      });
      // Kept even when another call is the one that waits: a resume finds the subagent's thread again.
      scope.journal.put({
        key,
        toolId,
        inputHash,
        state: "waiting",
        name: action.name ?? "default",
        suspendHistory: action.suspendHistory,
        subagent: { agentId, threadId: outcome.threadId, actionId: action.id },
      });
      throw wait.signal;
    }
    scope.journal.put({
      key,
      toolId,
      inputHash,
      state: "settled",
      outcome: { type: "output", output: outcome.result },
    });
    return outcome.result;
  }

  return {
    tool: (frame, childKey, child, input) =>
      start(frame, (key) => runTool(frame, key, [...frame.call.path, childKey], child, input)),
    agent: (frame, options) => start(frame, (key) => runSubagent(frame, key, options)),
  };
}

/** The journal key of `frame`'s next inner call. */
function nextKey(frame: CallFrame): string {
  const index = frame.next++;
  return frame.call.key === "" ? String(index) : `${frame.call.key}.${index}`;
}

/** The journal entry at `key`, checked against the call the run makes there now (`path[0]`: the top-level call). */
function journalEntryFor(
  scope: CallScope,
  key: string,
  path: string[],
  toolId: string,
  inputHash: string,
  toolCallId: string,
): JournalEntry | undefined {
  const recorded = scope.journal.take(key);
  if (!recorded || (recorded.toolId === toolId && recorded.inputHash === inputHash)) return recorded;
  throw scope.diverge(
    new PaiError(
      "JOURNAL_DIVERGED",
      `tool call "${toolCallId}" of "${path[0]}" cannot resume: call ${key} (${path.join(" › ")}) is "${toolId}"${recorded.toolId === toolId ? " with other input" : ""}, but its journal has "${recorded.toolId}" there. Calls must be made in the same order with the same input when a call runs again`,
      { details: { toolCallId, key, path, toolId, journalToolId: recorded.toolId } },
    ),
  );
}

/** The agent's first registration of tool `toolId`, if it registers one. */
function registrationOf(state: RunState, toolId: string): NormalizedRegistration | undefined {
  for (const candidate of state.agent.registrations.values()) {
    if (candidate.tool.id === toolId) return candidate;
  }
  return undefined;
}

/** How a settled inner call is journaled. */
function journalOutcomeOf(outcome: Settled): JournalOutcome {
  return outcome.type === "output"
    ? outcome
    : { type: "error", message: outcome.message, ...(outcome.code ? { code: outcome.code } : {}) };
}

/** What an inner caller gets: the output, or a planned failure it may catch (uncaught, it fails the caller). */
function replay(outcome: JournalOutcome): unknown {
  if (outcome.type === "output") return outcome.output;
  throw new ToolFailSignal(outcome.message, outcome.code);
}
