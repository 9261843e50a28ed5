import { Assistant, isPaiToolPart } from "@pai/react";
import type { ReactNode } from "react";
import type { ChatMessage } from "./chat-message.ts";

/** One message: its text, and every tool call as an `<Assistant.Tool>` card. */
export function MessageView({ message }: { message: ChatMessage }): ReactNode {
  return (
    <div className={`message ${message.role}`} data-message-id={message.id} data-role={message.role}>
      <div className="role">{message.role === "user" ? "You" : "Assistant"}</div>
      <div className="parts">
        {message.parts.map((part, index) => {
          if (part.type === "text") {
            return (
              // biome-ignore lint/suspicious/noArrayIndexKey: text parts have no id; their order is fixed
              <p key={index} className="text">
                {part.text}
              </p>
            );
          }
          return isPaiToolPart(part) ? (
            <Assistant.Tool key={part.toolCallId} message={message} part={part} />
          ) : null;
        })}
      </div>
    </div>
  );
}
