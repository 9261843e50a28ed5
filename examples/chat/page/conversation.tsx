import { PaiProvider, usePaiChat } from "@pai/react";
import { type FormEvent, type ReactNode, useEffect, useRef, useState } from "react";
import { API, isUnsentThread, markThreadSent } from "./chat-api.ts";
import type { ChatMessage } from "./chat-message.ts";
import { MessageView } from "./message-view.tsx";
import { RunScriptCard } from "./run-script-card.tsx";

/** Custom cards by tool id; every other tool gets `@pai/react`'s default card. */
const cards = { runScript: RunScriptCard };

/** What {@link Conversation} accepts. */
export interface ConversationProps {
  threadId: string;
  initialMessages: ChatMessage[];
  onActivity: () => void;
}

/** One thread: its messages (tool calls as `<Assistant.Tool>` cards) and the composer. */
export function Conversation({ threadId, initialMessages, onActivity }: ConversationProps): ReactNode {
  const [error, setError] = useState<string | undefined>(undefined);
  const [rejoin] = useState(() => !isUnsentThread(threadId));
  const chat = usePaiChat<ChatMessage>({
    api: API,
    threadId,
    messages: initialMessages,
    resume: rejoin,
    onRunEnd: onActivity,
    onError: (cause) => setError(cause.message),
  });
  const [draft, setDraft] = useState("");
  const end = useRef<HTMLDivElement>(null);

  // biome-ignore lint/correctness/useExhaustiveDependencies: scroll whenever the messages change
  useEffect(() => {
    end.current?.scrollIntoView?.({ block: "end" });
  }, [chat.messages]);
  useEffect(() => {
    if (chat.status === "streaming") onActivity();
  }, [chat.status, onActivity]);

  const send = (event: FormEvent) => {
    event.preventDefault();
    const text = draft.trim();
    if (!text || chat.busy) return;
    setDraft("");
    setError(undefined);
    markThreadSent(threadId);
    void chat.sendMessage({ text });
  };

  return (
    <PaiProvider api={API} threadId={threadId} cards={cards} onAnswer={chat.answer}>
      <div className="conversation" data-status={chat.busy ? "busy" : "idle"}>
        <div className="messages">
          {chat.messages.length === 0 ? (
            <div className="empty">
              <h1>What should we build?</h1>
              <p>
                The agent writes files and runs commands in a sandbox of its own for this conversation, and
                asks before it commits anything.
              </p>
            </div>
          ) : null}
          {chat.messages.map((message) => (
            <MessageView key={message.id} message={message} />
          ))}
          {chat.busy ? <div className="typing">working…</div> : null}
          <div ref={end} />
        </div>
        {error ? <p className="notice error">{error}</p> : null}
        <form className="composer" onSubmit={send}>
          <textarea
            name="message"
            placeholder="Ask for something to run…"
            value={draft}
            rows={2}
            onChange={(event) => setDraft(event.target.value)}
            onKeyDown={(event) => {
              if (event.key === "Enter" && !event.shiftKey) send(event);
            }}
          />
          {chat.busy ? (
            <button type="button" className="stop" onClick={() => void chat.stop()}>
              Stop
            </button>
          ) : (
            <button type="submit" className="send" disabled={!draft.trim()}>
              Send
            </button>
          )}
        </form>
      </div>
    </PaiProvider>
  );
}
