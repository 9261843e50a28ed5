// A page on the AI SDK's plain `useChat` — no PAI hook, no PAI route — talking to PAI's `POST /api/chat`:
// approvals through `addToolApprovalResponse`, the client tool through `addToolOutput`, both sent by
// `sendAutomaticallyWhen`. `?thread=<id>` picks the thread; its stored messages are loaded first.
import { useChat } from "@ai-sdk/react";
import { lastMessageOnly } from "@pai/core/client";
import {
  DefaultChatTransport,
  isToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
  type UIMessage,
} from "ai";
import { type ReactNode, StrictMode, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";

const headers = { "x-user": "alice" };
const threadId = new URLSearchParams(location.search).get("thread") ?? "t-page";

function Page(): ReactNode {
  const [stored, setStored] = useState<UIMessage[] | undefined>(undefined);
  useEffect(() => {
    fetch(`/api/threads/${threadId}`, { headers })
      .then(async (response) => setStored(response.ok ? (await response.json()).messages : []))
      .catch(() => setStored([]));
  }, []);
  return stored ? <Chat initial={stored} /> : <p>Loading…</p>;
}

function Chat({ initial }: { initial: UIMessage[] }): ReactNode {
  const [text, setText] = useState("");
  const { messages, setMessages, sendMessage, addToolApprovalResponse, addToolOutput, status, error } =
    useChat({
      id: threadId,
      messages: initial,
      transport: new DefaultChatTransport({
        api: "/api/chat",
        headers,
        prepareSendMessagesRequest: lastMessageOnly,
      }),
      sendAutomaticallyWhen: (options) =>
        lastAssistantMessageIsCompleteWithApprovalResponses(options) ||
        lastAssistantMessageIsCompleteWithToolCalls(options),
    });

  /** Approves after changing the call's input in this client's copy: the server must refuse it. */
  const approveChanged = (toolCallId: string, approvalId: string) => {
    setMessages((all) =>
      all.map((message) => ({
        ...message,
        parts: message.parts.map((part) =>
          isToolUIPart(part) && part.toolCallId === toolCallId
            ? ({ ...part, input: { service: "production-db" } } as typeof part)
            : part,
        ),
      })),
    );
    void addToolApprovalResponse({ id: approvalId, approved: true });
  };

  return (
    <main>
      {messages.map((message) => (
        <section key={message.id} className={`message ${message.role}`}>
          {message.parts.map((part, index) => {
            if (part.type === "text") {
              return (
                <p key={index} className="text">
                  {part.text}
                </p>
              );
            }
            if (!isToolUIPart(part)) return null;
            return (
              <div key={part.toolCallId} className="tool" data-type={part.type} data-state={part.state}>
                <code>{part.type}</code> <span className="state">{part.state}</span>
                {part.state === "approval-requested" ? (
                  <>
                    <button
                      type="button"
                      className="approve"
                      onClick={() => void addToolApprovalResponse({ id: part.approval.id, approved: true })}
                    >
                      Approve
                    </button>
                    <button
                      type="button"
                      className="deny"
                      onClick={() =>
                        void addToolApprovalResponse({
                          id: part.approval.id,
                          approved: false,
                          reason: "not from the browser",
                        })
                      }
                    >
                      Deny
                    </button>
                    <button
                      type="button"
                      className="approve-changed"
                      onClick={() => approveChanged(part.toolCallId, part.approval.id)}
                    >
                      Approve a changed call
                    </button>
                  </>
                ) : null}
                {part.type === "tool-pickColor" && part.state === "input-available"
                  ? ((part.input as { options: string[] }).options ?? []).map((color) => (
                      <button
                        key={color}
                        type="button"
                        className={`color ${color}`}
                        onClick={() =>
                          void addToolOutput({
                            tool: "pickColor",
                            toolCallId: part.toolCallId,
                            output: { color },
                          })
                        }
                      >
                        {color}
                      </button>
                    ))
                  : null}
              </div>
            );
          })}
        </section>
      ))}
      <form
        onSubmit={(event) => {
          event.preventDefault();
          void sendMessage({ text });
          setText("");
        }}
      >
        <input value={text} onChange={(event) => setText(event.target.value)} aria-label="Message" />
        <button type="submit">Send</button>
      </form>
      <output id="status">{status}</output>
      <p id="error">{error?.message ?? ""}</p>
    </main>
  );
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <Page />
  </StrictMode>,
);
