// A chat page on @pai/react, typed from the app's agent, as an app writes one; bundled by `vite build`.
import type { InferAgentUIMessage } from "@pai/core";
import { lastMessageOnly } from "@pai/core/client";
import { Assistant, isPaiToolPart, PaiProvider, usePaiChat } from "@pai/react";
import { createRoot } from "react-dom/client";
import type { agent } from "../src/run-script.ts";

type Message = InferAgentUIMessage<typeof agent>;

function Chat({ threadId }: { threadId: string }) {
  const chat = usePaiChat<Message>({ api: "/api", threadId, messages: [] });
  return (
    <PaiProvider api="/api" threadId={threadId} onAnswer={chat.answer}>
      {chat.messages.map((message) =>
        message.parts.map((part, index) =>
          isPaiToolPart(part) ? (
            <Assistant.Tool key={part.toolCallId} message={message} part={part} />
          ) : part.type === "text" ? (
            <p key={`${message.id}-${index}`}>{part.text}</p>
          ) : null,
        ),
      )}
      <button type="button" onClick={() => void chat.sendMessage({ text: "hello" })}>
        Send
      </button>
    </PaiProvider>
  );
}

console.debug("PAI client helper:", typeof lastMessageOnly);
createRoot(document.getElementById("root")!).render(<Chat threadId="t1" />);
