import { type ReactNode, useEffect, useState } from "react";
import type { ChatMessage } from "./chat-message.ts";
import { LineIcon } from "./line-icon.tsx";

/** How long "Copied" shows before the button says "Copy" again, in milliseconds. */
const FEEDBACK_MS = 2000;

/** What {@link MessageActions} accepts. */
export interface MessageActionsProps {
  message: ChatMessage;
}

/**
 * The row of actions under a message: Copy (the message's text, as markdown for the assistant's, to the
 * clipboard; the button says "Copied" for a moment). Edit, Regenerate and Fork from here belong here too.
 */
export function MessageActions({ message }: MessageActionsProps): ReactNode {
  const text = textOf(message);
  const [copied, setCopied] = useState<"copied" | "failed" | undefined>(undefined);
  useEffect(() => {
    if (!copied) return;
    const timer = setTimeout(() => setCopied(undefined), FEEDBACK_MS);
    return () => clearTimeout(timer);
  }, [copied]);
  if (!text) return null;
  const copy = () => {
    navigator.clipboard.writeText(text).then(
      () => setCopied("copied"),
      () => setCopied("failed"),
    );
  };
  const label = copied === "copied" ? "Copied" : copied === "failed" ? "Copy failed" : "Copy";
  return (
    <div className="message-actions">
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
      <span className="sr-only" role="status">
        {copied ? label : ""}
      </span>
    </div>
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

function CheckIcon(): ReactNode {
  return <LineIcon d="M5 12l5 5 9-10" />;
}
