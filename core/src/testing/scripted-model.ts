import type { LanguageModelV4CallOptions, LanguageModelV4StreamPart } from "@ai-sdk/provider";
import { simulateReadableStream } from "ai";
import { MockLanguageModelV4 } from "ai/test";

/** One tool call the scripted model makes. */
export interface ScriptedToolCall {
  toolName: string;
  input: unknown;
  /** @default generated `call-<step>-<index>` */
  toolCallId?: string;
}

/** One model step: text, tool calls, or both. */
export interface ScriptedStep {
  text?: string;
  toolCalls?: ScriptedToolCall[];
}

/** A step, or a function computing it from the request (to read tool results from the prompt). */
export type ScriptedStepSource = ScriptedStep | ((call: LanguageModelV4CallOptions) => ScriptedStep);

/** A scripted model: `MockLanguageModelV4` playing a fixed list of steps, one per model call. */
export interface ScriptedModel extends MockLanguageModelV4 {
  /** How many scripted steps have been played. */
  readonly stepsPlayed: number;
  /** Throws unless every scripted step was played. */
  assertComplete(): void;
}

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

/** The stream parts of one scripted step, as a provider would send them. */
export function scriptedStepParts(step: ScriptedStep, stepIndex: number): LanguageModelV4StreamPart[] {
  const parts: LanguageModelV4StreamPart[] = [{ type: "stream-start", warnings: [] }];
  if (step.text !== undefined) {
    const id = `text-${stepIndex}`;
    parts.push(
      { type: "text-start", id },
      { type: "text-delta", id, delta: step.text },
      { type: "text-end", id },
    );
  }
  const calls = step.toolCalls ?? [];
  calls.forEach((call, index) => {
    parts.push({
      type: "tool-call",
      toolCallId: call.toolCallId ?? `call-${stepIndex}-${index}`,
      toolName: call.toolName,
      input: JSON.stringify(call.input),
    });
  });
  parts.push({
    type: "finish",
    usage,
    finishReason: { unified: calls.length > 0 ? "tool-calls" : "stop", raw: undefined },
  });
  return parts;
}

/**
 * A model for tests and demos that plays `steps` in order, one per model call.
 * @example
 * const model = createScriptedModel({ steps: [{ toolCalls: [{ toolName: "search", input: { q: "x" } }] }, { text: "done" }] });
 * // ... run the agent ...
 * model.assertComplete();
 */
export function createScriptedModel(options: {
  steps: ScriptedStepSource[];
  /** Played once the script is exhausted; without it an extra call throws. */
  fallback?: ScriptedStepSource;
  modelId?: string;
}): ScriptedModel {
  let played = 0;
  const nextStep = (call: LanguageModelV4CallOptions): { step: ScriptedStep; index: number } => {
    const source = options.steps[played] ?? options.fallback;
    if (source === undefined) {
      throw new Error(`scripted model: no step ${played + 1} (the script has ${options.steps.length})`);
    }
    const index = played;
    played += 1;
    return { step: typeof source === "function" ? source(call) : source, index };
  };
  const model = new MockLanguageModelV4({
    provider: "pai-scripted",
    modelId: options.modelId ?? "scripted",
    doStream: async (call) => {
      const { step, index } = nextStep(call);
      return {
        stream: simulateReadableStream({
          chunks: scriptedStepParts(step, index),
          initialDelayInMs: null,
          chunkDelayInMs: null,
        }),
      };
    },
    doGenerate: async (call) => {
      const { step, index } = nextStep(call);
      const calls = step.toolCalls ?? [];
      return {
        content: [
          ...(step.text !== undefined ? [{ type: "text" as const, text: step.text }] : []),
          ...calls.map((toolCall, i) => ({
            type: "tool-call" as const,
            toolCallId: toolCall.toolCallId ?? `call-${index}-${i}`,
            toolName: toolCall.toolName,
            input: JSON.stringify(toolCall.input),
          })),
        ],
        finishReason: { unified: calls.length > 0 ? "tool-calls" : "stop", raw: undefined },
        usage,
        warnings: [],
      };
    },
  });
  Object.defineProperty(model, "stepsPlayed", { get: () => played });
  return Object.assign(model as MockLanguageModelV4 & { readonly stepsPlayed: number }, {
    assertComplete() {
      if (played < options.steps.length) {
        throw new Error(
          `scripted model: ${options.steps.length - played} of ${options.steps.length} steps were never played`,
        );
      }
    },
  });
}
