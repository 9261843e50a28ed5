import { type ReactNode, useEffect, useState } from "react";
import type { ChatMessage } from "./chat-message.ts";
import { LineIcon, PencilIcon, ReloadIcon } from "./line-icon.tsx";

/** How long "Copied" shows before the button says "Copy" again, in milliseconds. */
const FEEDBACK_MS = 2000;

/** What {@link MessageActions} accepts. */
export interface MessageActionsProps {
  message: ChatMessage;
  /** Offers Edit (a user message): turns the message into a text field. */
  onEdit?: () => void;
  /** Offers Regenerate (the last answer): a new answer in place of this one. */
  onRegenerate?: () => void;
  /** Offers Fork from here: a new conversation with the history up to this message. */
  onFork?: () => void;
  /** A fork from this message is under way. */
  forking?: boolean;
  /** Why the last Edit, Regenerate or Fork of this message was refused. */
  refusal?: string;
}

/**
 * The row of actions under a message: Copy (the message's text, as markdown for the assistant's, to the
 * clipboard; the button says "Copied" for a moment), and those offered: Edit, Regenerate, Fork from here. A refused
 * one's reason shows under the row.
 */
export function MessageActions({
  message,
  onEdit,
  onRegenerate,
  onFork,
  forking = false,
  refusal,
}: MessageActionsProps): ReactNode {
  const text = textOf(message);
  const [copied, setCopied] = useState<"copied" | "failed" | undefined>(undefined);
  useEffect(() => {
    if (!copied) return;
    const timer = setTimeout(() => setCopied(undefined), FEEDBACK_MS);
    return () => clearTimeout(timer);
  }, [copied]);
  if (!text && !onEdit && !onRegenerate && !onFork && !refusal) return null;
  const copy = () => {
    if (!text) return;
    navigator.clipboard.writeText(text).then(
      () => setCopied("copied"),
      () => setCopied("failed"),
    );
  };
  const label = copied === "copied" ? "Copied" : copied === "failed" ? "Copy failed" : "Copy";
  return (
    <>
      <div className="message-actions">
        {text ? (
          <button
            type="button"
            className="message-action"
            data-action="copy"
            data-feedback={copied}
            aria-label={copied ? label : `Copy ${message.role === "user" ? "your message" : "the reply"}`}
            title={copied ? undefined : "Copy"}
            onClick={copy}
          >
            {copied === "copied" ? <CheckIcon /> : <CopyIcon />}
            <span aria-hidden="true">{label}</span>
          </button>
        ) : null}
        {onEdit ? (
          <button
            type="button"
            className="message-action"
            data-action="edit"
            aria-label="Edit message"
            onClick={onEdit}
          >
            <PencilIcon />
            <span aria-hidden="true">Edit</span>
          </button>
        ) : null}
        {onRegenerate ? (
          <button type="button" className="message-action" data-action="regenerate" onClick={onRegenerate}>
            <ReloadIcon />
            Regenerate
          </button>
        ) : null}
        {onFork ? (
          <button
            type="button"
            className="message-action"
            data-action="fork"
            aria-label="Fork from here"
            aria-disabled={forking}
            onClick={forking ? undefined : onFork}
          >
            <ForkIcon />
            <span aria-hidden="true">{forking ? "Forking…" : "Fork from here"}</span>
          </button>
        ) : null}
        <span className="sr-only" role="status">
          {copied ? label : forking ? "Forking the conversation…" : ""}
        </span>
      </div>
      {refusal ? (
        <p className="message-refusal" role="alert">
          {refusal}
        </p>
      ) : null}
    </>
  );
}

/** The message's text parts, one paragraph each. */
export function textOf(message: ChatMessage): string {
  return message.parts
    .flatMap((part) => (part.type === "text" && part.text.trim() ? [part.text.trim()] : []))
    .join("\n\n");
}

function CopyIcon(): ReactNode {
  return (
    <svg viewBox="0 0 24 24" width="16" height="16" aria-hidden="true">
      <rect x="9" y="9" width="11" height="11" rx="2" fill="none" stroke="currentColor" strokeWidth="2" />
      <path
        d="M5 15V5a1 1 0 0 1 1-1h10"
        fill="none"
        stroke="currentColor"
        strokeWidth="2"
        strokeLinecap="round"
      />
    </svg>
  );
}

/** A branch leaving a line. */
function ForkIcon(): ReactNode {
  return (
    <LineIcon d="M6 3v12M6 21a3 3 0 1 0 0-6 3 3 0 0 0 0 6zM18 9a3 3 0 1 0 0-6 3 3 0 0 0 0 6zM18 9a9 9 0 0 1-9 9" />
  );
}

function CheckIcon(): ReactNode {
  return <LineIcon d="M5 12l5 5 9-10" />;
}
