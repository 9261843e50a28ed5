import type { InferAgentUIMessage } from "@pai/core";
import type { chatAgent } from "../server/chat-agent.ts";

/** A message of the chat agent's threads, its tool parts typed from the agent's tools. */
export type ChatMessage = InferAgentUIMessage<typeof chatAgent>;
