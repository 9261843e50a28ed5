import { AssistantTool } from "./assistant-tool.tsx";
import { PaiProvider } from "./pai-provider.tsx";

/**
 * The assistant UI namespace: `<Assistant.Tool message part />` renders a tool call,
 * `<Assistant.Provider>` is {@link PaiProvider}.
 * @example
 * {isPaiToolPart(part) ? <Assistant.Tool message={message} part={part} /> : null}
 */
export const Assistant = {
  Tool: AssistantTool,
  Provider: PaiProvider,
} as const;
