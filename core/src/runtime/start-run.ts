import { context } from "@opentelemetry/api";
import type { UIMessage, UIMessageChunk } from "ai";
import { startRunTelemetry } from "../telemetry/run-telemetry.ts";
import type { AgentRun, RunResult } from "./agent-run.ts";
import { finalizeRun } from "./finalize-run.ts";
import { type PreparedRun, prepareRun } from "./prepare-run.ts";
import type { RunDependencies, StartRunOptions } from "./run-dependencies.ts";
import { stopRun } from "./run-state.ts";
import { settleAnswers } from "./settle-answers.ts";
import { streamRun } from "./stream-run.ts";

/** A started run plus its controller (for `runtime.cancel`) and replayable stream (for HTTP resume). */
export interface StartedRun extends AgentRun {
  controller: AbortController;
  subscribe(): ReadableStream<UIMessageChunk>;
  /** The thread the run's stream builds on: with the stream replayed on top, a reader has the whole run. */
  baseMessages(): UIMessage[];
}

/**
 * Starts a run as a pipeline: prepare (context, thread, tools) → settle answers (a new message supersedes
 * pending actions) → record the run as started → stream the model loop → finalize (status, commit). Rejects,
 * with nothing run, when preparing fails (`runtimeContext` throws).
 */
export async function startRun(deps: RunDependencies, options: StartRunOptions): Promise<StartedRun> {
  const telemetry = startRunTelemetry(deps.telemetry, {
    runId: options.runId,
    threadId: options.thread.id,
    agentId: options.agent.id,
    continuation: options.userMessage === undefined,
  });
  let run: PreparedRun | undefined;
  try {
    run = await prepareRun(deps, options, telemetry);
    if (options.userMessage) {
      await settleAnswers(run, { supersede: true });
      run.transcript.appendUserMessage(options.userMessage);
    }
    await recordStart(run);
    run.chunks.start();
  } catch (error) {
    run?.detach();
    telemetry.end("failed", error);
    throw error;
  }
  const prepared = run;
  const stream = prepared.transcript.subscribe();
  const { state } = prepared;
  // Everything the run does (the model loop and the AI SDK's spans, its tools, their capabilities) runs below its span.
  const done = context
    .with(telemetry.context, () => drive(prepared))
    .then(
      (result) => {
        telemetry.end(result.status, result.error);
        return result;
      },
      (error: unknown) => {
        telemetry.end("failed", error);
        throw error;
      },
    );
  return {
    runId: state.runId,
    threadId: state.threadId,
    stream,
    subscribe: () => prepared.transcript.subscribe(),
    baseMessages: () => prepared.transcript.messages,
    done,
    controller: state.controller,
    cancel: () => state.controller.abort({ type: "cancelled" }),
  };
}

/** Stores the thread at once, so a reader (a reloaded page) sees the user's message while the run goes on. */
async function recordStart(run: PreparedRun): Promise<void> {
  await run.deps.store.commitRun({
    thread: { ...run.options.thread, updatedAt: run.startedAt },
    messages: run.transcript.messages,
    run: run.record,
  });
}

/** Settles answers of a continuation, streams the model loop, then finalizes; always ends the run's leases. */
async function drive(run: PreparedRun): Promise<RunResult> {
  const { state, deps } = run;
  let modelError: unknown;
  try {
    try {
      if (!run.options.userMessage) await settleAnswers(run, { supersede: false });
      if (state.pendingActions.length === 0 && !state.controller.signal.aborted) {
        ({ modelError } = await streamRun(run, run.options.model));
      }
    } catch (error) {
      if (!state.controller.signal.aborted) {
        await state.reportError(error, { phase: "run" });
        stopRun(state, { type: "failed", error });
      }
    }
    const result = await finalizeRun(run, modelError);
    // Before the run lets go of its resources and its thread: nothing changes them while they are recorded.
    await deps.checkpoints?.afterRun(
      result.threadId,
      result.messages,
      deps.capabilities.resourcesUsedBy(state.runId, state.threadId),
    );
    return result;
  } finally {
    run.detach();
    await deps.capabilities.endRun(state.runId).catch(() => undefined);
    await deps.onEnded(state.runId, state.threadId);
    // Last: a client that sees the stream end finds the thread stored and free for its next request.
    run.transcript.end();
  }
}
