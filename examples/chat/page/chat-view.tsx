import { type ReactNode, useEffect, useState } from "react";
import { loadThreadMessages } from "./chat-api.ts";
import type { ChatMessage } from "./chat-message.ts";
import { Conversation } from "./conversation.tsx";

/** What {@link ChatView} accepts. */
export interface ChatViewProps {
  threadId: string;
  /** Something changed the thread list (a message was sent, a run ended). */
  onActivity: () => void;
}

/** Loads a thread's stored messages, then shows the conversation (which reconnects to a run in progress). */
export function ChatView({ threadId, onActivity }: ChatViewProps): ReactNode {
  const [messages, setMessages] = useState<ChatMessage[] | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  useEffect(() => {
    const controller = new AbortController();
    loadThreadMessages(threadId, controller.signal)
      .then(setMessages)
      .catch((cause: unknown) => {
        if (!controller.signal.aborted) setError(cause instanceof Error ? cause.message : String(cause));
      });
    return () => controller.abort();
  }, [threadId]);
  if (error) return <p className="notice error">{error}</p>;
  if (!messages) return <p className="notice">Loading…</p>;
  return <Conversation threadId={threadId} initialMessages={messages} onActivity={onActivity} />;
}
