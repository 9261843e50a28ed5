import {
  isPaiToolPart,
  PaiProvider,
  type PendingActionAnswerEvent,
  pendingActionsOf,
  startingCapabilitiesOf,
  usePaiChat,
} from "@pai/react";
import { type ReactNode, useCallback, useEffect, useRef, useState } from "react";
import {
  API,
  isUnsentThread,
  loadSettledThread,
  loadThread,
  markThreadSent,
  type RunStatuses,
  runStatusOf,
  type ThreadState,
} from "./chat-api.ts";
import type { ChatMessage } from "./chat-message.ts";
import { Composer } from "./composer.tsx";
import { LineIcon } from "./line-icon.tsx";
import { MessageActions, textOf } from "./message-actions.tsx";
import { MessageEditor } from "./message-editor.tsx";
import { MessageView } from "./message-view.tsx";
import { PreviewCard } from "./preview-card.tsx";
import { refusalOf } from "./refusal-of.ts";
import { RunScriptCard } from "./run-script-card.tsx";
import { TerminalPanel } from "./terminal-panel.tsx";
import { useMessageRewinds } from "./use-message-rewinds.ts";
import { useStickToBottom } from "./use-stick-to-bottom.ts";

/**
 * Custom cards by tool id; `codeInterpreter` gets `@pai/react`'s own card, every other tool its default card.
 */
const cards = { runScript: RunScriptCard, startServer: PreviewCard };

/** What the cards call the agent's tools. */
const titles = {
  runScript: "Run a script",
  codeInterpreter: "Code interpreter",
  startServer: "Start a server",
  commitWork: "Commit to git",
};

/** Messages that start a conversation from the empty screen. */
const SUGGESTIONS = [
  "Show me the sandbox at work",
  "Write a script that prints Fibonacci numbers",
  "Plot a chart of some data",
  "Start a web server and show me the page",
];

/** What {@link Conversation} accepts. */
export interface ConversationProps {
  threadId: string;
  /** The thread as stored when it was opened. */
  initial: ThreadState;
  onActivity: () => void;
  /** Opens another thread (a fork made from this one). */
  onOpenThread: (threadId: string) => void;
}

/**
 * One thread: its messages (tool calls as `<Assistant.Tool>` cards; Edit on the user's, Regenerate on the last
 * answer, Fork from here on the answers), what the agent is doing, the composer.
 */
export function Conversation({ threadId, initial, onActivity, onOpenThread }: ConversationProps): ReactNode {
  const [error, setError] = useState<string | undefined>(undefined);
  const [runs, setRuns] = useState<RunStatuses>(initial.runs);
  const [rejoin] = useState(() => !isUnsentThread(threadId));
  const [terminalOpen, setTerminalOpen] = useState(false);
  const terminalButton = useRef<HTMLButtonElement>(null);
  const input = useRef<HTMLTextAreaElement>(null);
  const { scroller, atBottom, jumpToLatest } = useStickToBottom();

  /** Puts focus back in the text box when what had it went away (an answered card's buttons, Stop). */
  const restoreFocus = useCallback(() => {
    const active = document.activeElement;
    if (!active || active === document.body) input.current?.focus({ preventScroll: true });
  }, []);

  const refreshRuns = useCallback(() => {
    loadThread(threadId)
      .then((state) => setRuns(state.runs))
      .catch(() => undefined);
  }, [threadId]);

  const chat = usePaiChat<ChatMessage>({
    api: API,
    threadId,
    messages: initial.messages,
    resume: rejoin,
    onRunEnd: () => {
      onActivity();
      refreshRuns();
    },
    onError: (cause) => {
      if (!rewinds.refused(cause)) setError(refusalOf(cause)?.message ?? cause.message);
    },
  });
  const { answer: answerAction, setMessages } = chat;

  const answer = useCallback(
    async (event: PendingActionAnswerEvent) => {
      setTimeout(restoreFocus, 0); // the card's buttons are gone once it re-renders
      try {
        return await answerAction(event);
      } finally {
        onActivity();
        restoreFocus();
      }
    },
    [answerAction, restoreFocus, onActivity],
  );

  const rewinds = useMessageRewinds({
    threadId,
    chat,
    onOpenThread,
    onStart: useCallback(() => {
      setError(undefined);
      jumpToLatest();
      input.current?.focus({ preventScroll: true });
    }, [jumpToLatest]),
  });

  const send = (text: string) => {
    setError(undefined);
    markThreadSent(threadId);
    jumpToLatest();
    // the Send button turns into Stop and a suggestion goes away: the text box keeps the focus
    input.current?.focus({ preventScroll: true });
    void chat.sendMessage({ text });
  };

  const stop = async () => {
    const last = chat.messages.at(-1);
    const runId = last?.role === "assistant" ? last.metadata?.runId : undefined;
    if (runId) setRuns((current) => ({ ...current, [runId]: "cancelled" }));
    await chat.stop();
    restoreFocus();
    // the server stores the stopped run's calls and status: show what it stored
    try {
      const state = await loadSettledThread(threadId);
      setMessages(state.messages);
      setRuns(state.runs);
    } catch (cause) {
      setError(cause instanceof Error ? cause.message : String(cause));
    }
    onActivity();
  };

  const wasBusy = useRef(chat.busy);
  useEffect(() => {
    if (chat.status === "streaming") onActivity();
  }, [chat.status, onActivity]);
  useEffect(() => {
    if (wasBusy.current && !chat.busy) restoreFocus();
    wasBusy.current = chat.busy;
  }, [chat.busy, restoreFocus]);

  const closeTerminal = useCallback(() => {
    setTerminalOpen(false);
    terminalButton.current?.focus();
  }, []);

  /** Edit, Regenerate and Fork from here are offered: nothing streams and no fork is being made. */
  const idle = !chat.busy && rewinds.forking === undefined;
  const last = chat.messages.at(-1);
  const lastAssistant = last?.role === "assistant" ? last : undefined;
  const starting = lastAssistant ? startingCapabilitiesOf(lastAssistant) : [];
  const waiting = lastAssistant
    ? pendingActionsOf(lastAssistant).some((action) => action.status === "pending")
    : false;
  const activity = !chat.busy
    ? undefined
    : starting.length > 0
      ? `Starting the ${starting.join(", ")}…`
      : lastAssistant && showsProgress(lastAssistant)
        ? undefined
        : "Thinking…";
  const announcement = chat.busy
    ? (activity ?? "The assistant is working.")
    : waiting
      ? "The assistant needs your approval."
      : "";

  return (
    <PaiProvider api={API} threadId={threadId} cards={cards} titles={titles} onAnswer={answer}>
      <div className="conversation" data-status={chat.busy ? "busy" : "idle"}>
        {/* the sandbox is the thread's: it exists once the thread has a message */}
        {chat.messages.length > 0 ? (
          <div className="conversation-head">
            <button
              ref={terminalButton}
              type="button"
              className="terminal-toggle"
              aria-expanded={terminalOpen}
              aria-controls="terminal-panel"
              onClick={() => (terminalOpen ? closeTerminal() : setTerminalOpen(true))}
            >
              <TerminalIcon /> Terminal
            </button>
          </div>
        ) : null}
        <div className="messages-frame">
          <div className="messages" ref={scroller}>
            <div className="thread-column">
              {chat.messages.length === 0 ? (
                <div className="empty">
                  <h1>What should we build?</h1>
                  <p>
                    The agent writes files and runs commands in a sandbox of its own for this conversation,
                    and asks before it commits anything.
                  </p>
                  <div className="suggestions">
                    {SUGGESTIONS.map((text) => (
                      <button key={text} type="button" className="suggestion" onClick={() => send(text)}>
                        {text}
                      </button>
                    ))}
                  </div>
                </div>
              ) : null}
              {chat.messages.map((message, index) =>
                rewinds.editing?.messageId === message.id ? (
                  <MessageEditor
                    key={message.id}
                    messageId={message.id}
                    draft={rewinds.editing.draft}
                    onSave={(text) => rewinds.saveEdit(message.id, text)}
                    onCancel={rewinds.cancelEdit}
                    {...(rewinds.refusal?.messageId === message.id
                      ? { refusal: rewinds.refusal.message }
                      : {})}
                  />
                ) : (
                  <MessageView
                    key={message.id}
                    message={message}
                    runStatus={runStatusOf(message, runs)}
                    streaming={chat.busy && index === chat.messages.length - 1}
                    actions={
                      <MessageActions
                        message={message}
                        {...(idle && message.role === "user"
                          ? { onEdit: () => rewinds.startEdit(message.id, textOf(message)) }
                          : {})}
                        {...(idle && message.role === "assistant" && index === chat.messages.length - 1
                          ? { onRegenerate: () => rewinds.regenerate(message.id) }
                          : {})}
                        {...(message.role === "assistant" && (idle || rewinds.forking === message.id)
                          ? { onFork: () => rewinds.fork(message.id) }
                          : {})}
                        forking={rewinds.forking === message.id}
                        {...(rewinds.refusal?.messageId === message.id
                          ? { refusal: rewinds.refusal.message }
                          : {})}
                      />
                    }
                  />
                ),
              )}
              {activity ? (
                <div className="activity" aria-hidden="true">
                  <span className="dots">
                    <span />
                    <span />
                    <span />
                  </span>
                  {activity}
                </div>
              ) : null}
            </div>
          </div>
          {atBottom ? null : (
            <button
              type="button"
              className="jump-to-latest"
              onClick={() => {
                jumpToLatest("smooth");
                input.current?.focus({ preventScroll: true });
              }}
            >
              <ArrowDownIcon /> Jump to latest
            </button>
          )}
        </div>
        <div className="sr-only" role="status" aria-live="polite">
          {announcement}
        </div>
        {error ? (
          <p className="notice error" role="alert">
            {error}
          </p>
        ) : null}
        <Composer busy={chat.busy} onSend={send} onStop={() => void stop()} inputRef={input} />
        {terminalOpen ? <TerminalPanel threadId={threadId} onClose={closeTerminal} /> : null}
      </div>
    </PaiProvider>
  );
}

function ArrowDownIcon(): ReactNode {
  return <LineIcon d="M12 5v14M6 13l6 6 6-6" />;
}

function TerminalIcon(): ReactNode {
  return <LineIcon d="M4 6l6 6-6 6M12 18h8" />;
}

/** The message's last part shows progress itself: text streaming in (with its caret), or a call running. */
function showsProgress(message: ChatMessage): boolean {
  const last = message.parts.filter((part) => part.type === "text" || isPaiToolPart(part)).at(-1);
  if (!last) return false;
  if (last.type === "text") return last.state === "streaming";
  return isPaiToolPart(last) && (last.state === "input-streaming" || last.state === "input-available");
}
