import type { RunStatus } from "@pai/core";
import { Assistant, isPaiToolPart, wokenNoteOf } from "@pai/react";
import { lazy, type ReactNode, Suspense } from "react";
import type { ChatMessage } from "./chat-message.ts";
import { plainTextOf } from "./plain-text-of.ts";

/**
 * The markdown renderer is a chunk of its own, asked for as soon as the page starts (not when the first message
 * renders); until it is there, the text shows without its markdown syntax, in the same place.
 */
const markdownChunk = import("./markdown.tsx");
const Markdown = lazy(() => markdownChunk);

/** What {@link MessageView} accepts. */
export interface MessageViewProps {
  message: ChatMessage;
  /** How the message's run ended (open tool calls of a stopped run show as stopped). */
  runStatus: RunStatus | undefined;
  /** The message's run is still going (text may be streaming into it). */
  streaming: boolean;
  /** The row of actions under the message (Copy). */
  actions?: ReactNode;
}

/**
 * One message: the user's text as typed, the assistant's as markdown, every tool call as a card, and a note where
 * a capability woke from hibernation.
 */
export function MessageView({ message, runStatus, streaming, actions }: MessageViewProps): ReactNode {
  // the caret shows while text streams in: on the last text part, only while nothing (a tool call) follows it
  const lastShown = message.parts.findLastIndex((part) => part.type === "text" || isPaiToolPart(part));
  return (
    <article className={`message ${message.role}`} data-message-id={message.id} data-role={message.role}>
      <h2 className="sr-only">{message.role === "user" ? "You said" : "The assistant said"}</h2>
      <div className="parts">
        {message.parts.map((part, index) => {
          if (part.type === "text") {
            if (message.role === "user") {
              return (
                // biome-ignore lint/suspicious/noArrayIndexKey: text parts have no id; their order is fixed
                <p key={index} className="text">
                  {part.text}
                </p>
              );
            }
            return (
              // biome-ignore lint/suspicious/noArrayIndexKey: text parts have no id; their order is fixed
              <div key={index} className="text markdown">
                <Suspense fallback={<p className="plain">{plainTextOf(part.text)}</p>}>
                  <Markdown
                    text={part.text}
                    streaming={streaming && index === lastShown && part.state === "streaming"}
                  />
                </Suspense>
              </div>
            );
          }
          if (isPaiToolPart(part)) {
            return (
              <Assistant.Tool key={part.toolCallId} message={message} part={part} runStatus={runStatus} />
            );
          }
          const woken = wokenNoteOf(part);
          return woken ? (
            // biome-ignore lint/suspicious/noArrayIndexKey: status parts have no id; their order is fixed
            <p key={index} className="capability-note" role="note">
              {woken}
            </p>
          ) : null;
        })}
      </div>
      {streaming ? null : actions}
    </article>
  );
}
