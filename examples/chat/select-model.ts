import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { LanguageModel } from "ai";
import { createScriptedPlan } from "./server/scripted-plan.ts";

/** The model the chat server runs on, and how it was chosen (for the start-up banner). */
export interface SelectedModel {
  model: LanguageModel;
  /** e.g. `OpenAI gpt-4.1-mini`, or `scripted demo model` */
  description: string;
  scripted: boolean;
}

/**
 * Picks the model from the environment: `PAI_MODEL_BASE_URL` (any OpenAI-compatible server — Ollama, vLLM —
 * with `PAI_MODEL` naming the model, `PAI_MODEL_API_KEY` optional), `OPENAI_API_KEY` (`@ai-sdk/openai`) or
 * `ANTHROPIC_API_KEY` (`@ai-sdk/anthropic`); `PAI_MODEL` overrides the model name. With none set, the scripted
 * demo plan.
 */
export function selectModel(env: NodeJS.ProcessEnv = process.env): SelectedModel {
  const name = env.PAI_MODEL;
  if (env.PAI_MODEL_BASE_URL) {
    if (!name)
      throw new Error("PAI_MODEL_BASE_URL is set: set PAI_MODEL to the model's name too (e.g. llama3.1)");
    const provider = createOpenAICompatible({
      name: "pai-compatible",
      baseURL: env.PAI_MODEL_BASE_URL,
      ...(env.PAI_MODEL_API_KEY ? { apiKey: env.PAI_MODEL_API_KEY } : {}),
    });
    return {
      model: provider.chatModel(name),
      description: `${name} at ${env.PAI_MODEL_BASE_URL}`,
      scripted: false,
    };
  }
  if (env.OPENAI_API_KEY) {
    const model = name ?? "gpt-4.1-mini";
    return {
      model: createOpenAI({ apiKey: env.OPENAI_API_KEY })(model),
      description: `OpenAI ${model}`,
      scripted: false,
    };
  }
  if (env.ANTHROPIC_API_KEY) {
    const model = name ?? "claude-sonnet-4-5";
    return {
      model: createAnthropic({ apiKey: env.ANTHROPIC_API_KEY })(model),
      description: `Anthropic ${model}`,
      scripted: false,
    };
  }
  return {
    model: createScriptedPlan(),
    description:
      "scripted demo model (set OPENAI_API_KEY, ANTHROPIC_API_KEY or PAI_MODEL_BASE_URL for a real one)",
    scripted: true,
  };
}
