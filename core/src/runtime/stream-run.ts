import {
  convertToModelMessages,
  generateId,
  isStepCount,
  type LanguageModel,
  type ModelMessage,
  streamText,
} from "ai";
import { capabilityNoteForModel } from "../capabilities/capability-note-for-model.ts";
import { aiTelemetryForCall } from "../telemetry/ai-telemetry.ts";
import type { PreparedRun } from "./prepare-run.ts";
import { redactedMessage } from "./redaction.ts";
import { resolveActiveTools } from "./resolve-enabled.ts";

/** What the model loop left behind. */
export interface StreamedRun {
  /** The first error the model stream reported, if any. */
  modelError: unknown;
}

/**
 * Runs the model loop on `streamText` over the transcript's messages and streams it into the transcript, until
 * the model finishes, a call waits for an answer, or the run is stopped.
 */
export async function streamRun(run: PreparedRun, model: LanguageModel): Promise<StreamedRun> {
  const { state, transcript, tools } = run;
  const { agent, resolverArgs, controller } = state;
  const definition = agent.definition;
  const streamed: StreamedRun = { modelError: undefined };
  const instructions =
    typeof definition.instructions === "function"
      ? await definition.instructions(resolverArgs)
      : definition.instructions;
  const gated = [...agent.registrations.values()].some((registration) => registration.enabled !== undefined);
  const sourced = agent.sources.size > 0;
  const modelMessages = await convertToModelMessages(transcript.messages, {
    tools,
    ignoreIncompleteToolCalls: true,
    convertDataPart: capabilityNoteForModel,
  });
  const aiTelemetry = aiTelemetryForCall(run.deps.telemetry.ai);
  const result = streamText({
    model,
    ...(instructions !== undefined ? { instructions } : {}),
    messages: modelMessages,
    tools,
    stopWhen: [isStepCount(definition.maxSteps), () => state.pendingActions.length > 0],
    abortSignal: controller.signal,
    ...(aiTelemetry ? { telemetry: aiTelemetry } : {}),
    // Only agents with `enabled` gates, tool sources (or their own prepareStep) pay for a per-step hook.
    ...(gated || sourced || definition.prepareStep
      ? {
          prepareStep: async ({ stepNumber, messages }: { stepNumber: number; messages: ModelMessage[] }) => {
            const offered = sourced ? await run.refreshTools() : undefined;
            const registrations = state.agent.registrations;
            const activeTools =
              gated || offered
                ? await resolveActiveTools(
                    offered ? offered.map((name) => registrations.get(name)!) : registrations.values(),
                    resolverArgs,
                  )
                : undefined;
            const extra = (await definition.prepareStep?.({ stepNumber, messages })) ?? {};
            return { ...(activeTools ? { activeTools } : {}), ...extra };
          },
        }
      : {}),
    onError: ({ error }) => {
      streamed.modelError ??= error;
    },
  });
  await transcript.pipe(
    result.toUIMessageStream({
      originalMessages: transcript.messages,
      generateMessageId: generateId,
      messageMetadata: ({ part }) =>
        part.type === "start" ? { runId: state.runId, agentId: agent.id } : undefined,
      onError: redactedMessage,
      onFinish: ({ messages }) => transcript.replyFinished(messages),
    }),
  );
  return streamed;
}
