import type { UsePaiChatHelpers } from "@pai/react";
import { useCallback, useEffect, useRef, useState } from "react";
import { forkThread } from "./chat-api.ts";
import type { ChatMessage } from "./chat-message.ts";
import { refusalOf } from "./refusal-of.ts";

/** What {@link useMessageRewinds} takes. */
export interface UseMessageRewindsOptions {
  threadId: string;
  chat: Pick<UsePaiChatHelpers<ChatMessage>, "messages" | "setMessages" | "sendMessage" | "regenerate">;
  /** Called as an edit or a regeneration goes out (the page scrolls to the end, the message box takes focus). */
  onStart: () => void;
  /** Opens a thread (the fork just made). */
  onOpenThread: (threadId: string) => void;
}

/** The user message being edited, and the text in its field. */
export interface MessageEdit {
  messageId: string;
  draft: string;
}

/** Edit, Regenerate and Fork from here for a conversation's messages. */
export interface MessageRewinds {
  editing: MessageEdit | undefined;
  startEdit: (messageId: string, text: string) => void;
  cancelEdit: () => void;
  /** Sends `text` in place of the user message (`useChat`'s `sendMessage({ text, messageId })`). */
  saveEdit: (messageId: string, text: string) => void;
  /** A new answer in place of the assistant message (`useChat`'s `regenerate({ messageId })`). */
  regenerate: (messageId: string) => void;
  /** Forks the thread at the message and opens the fork. */
  fork: (messageId: string) => void;
  /** The message a fork is being made from. */
  forking: string | undefined;
  /** The last refused action: the message it was on and the server's reason. */
  refusal: { messageId: string; message: string } | undefined;
  /**
   * For `usePaiChat`'s `onError`: when `error` is the server refusing the edit or regeneration under way, puts the
   * messages back as they were (the server changed nothing), reopens a refused edit with its text, keeps the reason
   * for the message, and returns `true`; otherwise `false`.
   */
  refused: (error: Error) => boolean;
}

/**
 * Edit, Regenerate and Fork from here. `useChat` drops the later messages from the page as an edit or a
 * regeneration goes out; when the server refuses it (`THREAD_BUSY`, `UNKNOWN_MESSAGE`, ...) nothing is lost: the
 * messages come back and the reason shows under the message.
 */
export function useMessageRewinds({
  threadId,
  chat,
  onStart,
  onOpenThread,
}: UseMessageRewindsOptions): MessageRewinds {
  const [editing, setEditing] = useState<MessageEdit | undefined>(undefined);
  const [forking, setForking] = useState<string | undefined>(undefined);
  const [refusal, setRefusal] = useState<MessageRewinds["refusal"]>(undefined);
  const [returnFocus, setReturnFocus] = useState<string | undefined>(undefined);
  /** The edit or regeneration under way: the message, the messages before it went out, an edit's text. */
  const underway = useRef<{ messageId: string; before: ChatMessage[]; draft?: string } | undefined>(
    undefined,
  );
  const { messages, setMessages, sendMessage, regenerate: regenerateMessage } = chat;

  // a cancelled edit gives focus back to its Edit button
  useEffect(() => {
    if (returnFocus === undefined) return;
    document
      .querySelector<HTMLElement>(`[data-message-id="${CSS.escape(returnFocus)}"] [data-action="edit"]`)
      ?.focus({ preventScroll: true });
    setReturnFocus(undefined);
  }, [returnFocus]);

  const rewind = useCallback(
    async (messageId: string, request: () => Promise<void>, draft?: string) => {
      setRefusal(undefined);
      underway.current = { messageId, before: messages, ...(draft === undefined ? {} : { draft }) };
      onStart();
      try {
        await request();
      } finally {
        underway.current = undefined;
      }
    },
    [messages, onStart],
  );

  const refused = (error: Error): boolean => {
    const action = underway.current;
    const reason = refusalOf(error);
    if (!action || !reason) return false;
    setMessages(action.before);
    setRefusal({ messageId: action.messageId, message: reason.message });
    if (action.draft !== undefined) setEditing({ messageId: action.messageId, draft: action.draft });
    return true;
  };

  return {
    editing,
    startEdit: (messageId, text) => {
      setRefusal(undefined);
      setEditing({ messageId, draft: text });
    },
    cancelEdit: () => {
      setReturnFocus(editing?.messageId);
      setEditing(undefined);
    },
    saveEdit: (messageId, text) => {
      setEditing(undefined);
      void rewind(messageId, () => sendMessage({ text, messageId }), text);
    },
    regenerate: (messageId) => void rewind(messageId, () => regenerateMessage({ messageId })),
    fork: (messageId) => {
      setRefusal(undefined);
      setForking(messageId);
      forkThread({ threadId, atMessageId: messageId })
        .then(onOpenThread, (cause: unknown) =>
          setRefusal({
            messageId,
            message: refusalOf(cause)?.message ?? (cause instanceof Error ? cause.message : String(cause)),
          }),
        )
        .finally(() => setForking(undefined));
    },
    forking,
    refusal,
    refused,
  };
}
