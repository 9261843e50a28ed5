import { modelFromEnv } from "@pai/examples-shared/model-from-env";
import type { LanguageModel } from "ai";
import { createScriptedPlan } from "./server/scripted-plan.ts";

/** The model the chat server runs on, and how it was chosen (for the start-up banner). */
export interface SelectedModel {
  model: LanguageModel;
  /** e.g. `OpenAI gpt-4.1-mini`, or `scripted demo model` */
  description: string;
  scripted: boolean;
}

/** A real model from the environment (see `modelFromEnv`), or the scripted demo plan when none is configured. */
export function selectModel(env: NodeJS.ProcessEnv = process.env): SelectedModel {
  const real = modelFromEnv(env);
  if (real.model) return { model: real.model, description: real.description ?? "", scripted: false };
  return {
    model: createScriptedPlan(),
    description:
      "scripted demo model (set OPENAI_API_KEY, ANTHROPIC_API_KEY or PAI_MODEL_BASE_URL for a real one)",
    scripted: true,
  };
}
