import { type ReactNode, useEffect, useState } from "react";
import { loadThread, type ThreadState } from "./chat-api.ts";
import { Conversation } from "./conversation.tsx";

/** What {@link ChatView} accepts. */
export interface ChatViewProps {
  threadId: string;
  /** Something changed the thread list (a message was sent, a run ended). */
  onActivity: () => void;
  /** Opens another thread (a fork). */
  onOpenThread: (threadId: string) => void;
}

/** Loads a thread's stored state, then shows the conversation (which reconnects to a run in progress). */
export function ChatView({ threadId, onActivity, onOpenThread }: ChatViewProps): ReactNode {
  const [thread, setThread] = useState<ThreadState | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  useEffect(() => {
    const controller = new AbortController();
    loadThread(threadId, controller.signal)
      .then(setThread)
      .catch((cause: unknown) => {
        if (!controller.signal.aborted) setError(cause instanceof Error ? cause.message : String(cause));
      });
    return () => controller.abort();
  }, [threadId]);
  if (error) {
    return (
      <p className="notice error" role="alert">
        {error}
      </p>
    );
  }
  if (!thread) {
    return (
      <div className="loading" role="status">
        <span className="sr-only">Loading the conversation…</span>
        <div className="skeleton wide" />
        <div className="skeleton" />
        <div className="skeleton narrow" />
      </div>
    );
  }
  return (
    <Conversation threadId={threadId} initial={thread} onActivity={onActivity} onOpenThread={onOpenThread} />
  );
}
