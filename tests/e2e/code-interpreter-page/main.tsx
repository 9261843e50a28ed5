// A page on `usePaiChat` and `<Assistant.Tool>`, nothing else: a code interpreter call gets @pai/react's own card.
// "Send" sends one message; the server's scripted model answers it with code interpreter calls.
import { Assistant, isPaiToolPart, PaiProvider, usePaiChat } from "@pai/react";
import { type ReactNode, StrictMode } from "react";
import { createRoot } from "react-dom/client";

const headers = { "x-user": "alice" };
const threadId = "t-interpreter-card";

function Page(): ReactNode {
  const chat = usePaiChat({ threadId, headers });
  return (
    <PaiProvider threadId={threadId} headers={headers} onAnswer={chat.answer}>
      <button type="button" className="send" onClick={() => void chat.sendMessage({ text: "run the cells" })}>
        Send
      </button>
      {chat.messages.map((message) =>
        message.parts.map((part, index) =>
          isPaiToolPart(part) ? (
            <Assistant.Tool key={part.toolCallId} message={message} part={part} />
          ) : part.type === "text" ? (
            <p key={`${message.id}-${index}`} className="text">
              {part.text}
            </p>
          ) : null,
        ),
      )}
      <p className="chat-status">{chat.status}</p>
    </PaiProvider>
  );
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <Page />
  </StrictMode>,
);
