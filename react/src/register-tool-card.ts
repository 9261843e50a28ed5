import type { ToolCard } from "./tool-card.ts";

const registry = new Map<string, ToolCard>();

/**
 * Registers the card every `<Assistant.Tool>` uses for a tool id, app-wide. Cards given to `<PaiProvider cards>`
 * or `<Assistant.Tool card>` win over registered ones. Returns a function that removes the registration.
 * @example
 * registerToolCard("runCode", RunCodeCard);
 */
export function registerToolCard(toolId: string, card: ToolCard): () => void {
  registry.set(toolId, card);
  return () => {
    if (registry.get(toolId) === card) registry.delete(toolId);
  };
}

/** The card registered for a tool id, if any. */
export function registeredToolCard(toolId: string): ToolCard | undefined {
  return registry.get(toolId);
}
