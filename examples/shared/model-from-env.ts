import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { LanguageModel } from "ai";

/** The model the examples run on, and how it was chosen (for the banner). */
export interface ModelFromEnv {
  model: LanguageModel | undefined;
  /** `undefined` when no variable is set: the example's embedded scripted model is used. */
  description: string | undefined;
}

/**
 * Picks a real model from the environment: `OPENAI_API_KEY` (`@ai-sdk/openai`), `ANTHROPIC_API_KEY`
 * (`@ai-sdk/anthropic`) or `PAI_MODEL_BASE_URL` (any OpenAI-compatible server: Ollama, vLLM, ...).
 * `PAI_MODEL` overrides the model name. With none set, `model` is `undefined`.
 */
export function modelFromEnv(env: NodeJS.ProcessEnv = process.env): ModelFromEnv {
  const name = env.PAI_MODEL;
  if (env.PAI_MODEL_BASE_URL) {
    if (!name)
      throw new Error("PAI_MODEL_BASE_URL is set: set PAI_MODEL to the model's name too (e.g. llama3.1)");
    const provider = createOpenAICompatible({
      name: "pai-compatible",
      baseURL: env.PAI_MODEL_BASE_URL,
      ...(env.PAI_MODEL_API_KEY ? { apiKey: env.PAI_MODEL_API_KEY } : {}),
    });
    return { model: provider.chatModel(name), description: `${name} at ${env.PAI_MODEL_BASE_URL}` };
  }
  if (env.OPENAI_API_KEY) {
    const model = name ?? "gpt-4.1-mini";
    return { model: createOpenAI({ apiKey: env.OPENAI_API_KEY })(model), description: `OpenAI ${model}` };
  }
  if (env.ANTHROPIC_API_KEY) {
    const model = name ?? "claude-sonnet-4-5";
    return {
      model: createAnthropic({ apiKey: env.ANTHROPIC_API_KEY })(model),
      description: `Anthropic ${model}`,
    };
  }
  return { model: undefined, description: undefined };
}
