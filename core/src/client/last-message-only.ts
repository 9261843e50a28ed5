/** What `DefaultChatTransport` hands `prepareSendMessagesRequest` (the part {@link lastMessageOnly} reads). */
export interface SendMessagesRequestOptions<MESSAGE> {
  id: string;
  messages: MESSAGE[];
  body: Record<string, unknown> | undefined;
  trigger: "submit-message" | "regenerate-message";
  messageId: string | undefined;
}

/**
 * A `prepareSendMessagesRequest` for `DefaultChatTransport` that sends only the chat's last message — the user's
 * new message, or the assistant's message carrying approval responses and client tool outputs — which is all PAI's
 * `POST /chat` reads (the thread is stored on the server). Long threads then stay under the handler's
 * `maxBodyBytes`. Safe in the browser (`@pai/core/client`).
 * @example
 * const transport = new DefaultChatTransport({ api: "/api/chat", prepareSendMessagesRequest: lastMessageOnly });
 */
export function lastMessageOnly<MESSAGE>(options: SendMessagesRequestOptions<MESSAGE>): {
  body: Record<string, unknown>;
} {
  return {
    body: {
      ...options.body,
      id: options.id,
      messages: options.messages.slice(-1),
      trigger: options.trigger,
      messageId: options.messageId,
    },
  };
}
