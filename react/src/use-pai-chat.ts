import { type UseChatHelpers, useChat } from "@ai-sdk/react";
import { lastMessageOnly } from "@pai/core/client";
import { DefaultChatTransport, type UIMessage } from "ai";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { type AnswerActionResult, answerAction } from "./answer-action.ts";
import { followRunStream, upsertMessage } from "./follow-run-stream.ts";
import type { PendingActionAnswerEvent } from "./pai-provider.tsx";
import { PaiResponseError } from "./pai-response-error.ts";
import { placeActionParts } from "./place-action-parts.ts";

/** What {@link usePaiChat} accepts. */
export interface UsePaiChatOptions<MESSAGE extends UIMessage> {
  /** Base path of PAI's HTTP handler (`{api}/chat` is the `useChat` endpoint). @default "/api" */
  api?: string;
  /** The thread: the chat's id, sent as `id` with every message. */
  threadId: string;
  /** The thread's stored messages (`GET {api}/threads/:id`), shown before anything streams. */
  messages?: MESSAGE[];
  /**
   * Reconnect to the thread's run in progress on mount and when `threadId` changes
   * (`GET {api}/chat/:id/stream`), so a reload picks up a streaming reply or a continuation where it is.
   * @default true
   */
  resume?: boolean;
  /** Extra request headers (auth). */
  headers?: Record<string, string>;
  /** Called whenever a stream this chat follows ends (a reply, a continuation, a reconnected run). */
  onRunEnd?: () => void;
  onError?: (error: Error) => void;
}

/**
 * `useChat`'s helpers plus PAI's: answering pending actions and following runs the chat did not start.
 * `messages` is the thread-wide view: each action's `data-pai-action` part sits beside its call
 * ({@link placeActionParts}).
 */
export type UsePaiChatHelpers<MESSAGE extends UIMessage> = Omit<UseChatHelpers<MESSAGE>, "stop"> & {
  /**
   * Answers a pending action and streams the continuation (the tool's result, then the model's reply) into
   * the chat. Pass it to `<PaiProvider onAnswer>`.
   */
  answer: (event: PendingActionAnswerEvent) => Promise<AnswerActionResult>;
  /** Follows the thread's run in progress, if any; `false` when none is running. */
  reconnect: (signal?: AbortSignal) => Promise<boolean>;
  /** Stops the thread's run on the server (`POST {api}/chat/:id/stop`) and the local stream. */
  stop: () => Promise<void>;
  /** A continuation or reconnected run is streaming in (outside `useChat`'s own `status`). */
  following: boolean;
  /** Something is streaming: `status` is `submitted`/`streaming`, or {@link following}. */
  busy: boolean;
};

/**
 * `useChat` wired to PAI's HTTP handler. On top of sending messages it answers pending actions with the
 * continuation streamed into the same assistant message, and reconnects to a run in progress after a reload.
 * (`useChat`'s own `resume` starts a fresh assistant message, which cannot take a continuation's update of an
 * earlier tool part; this hook applies replays onto the stored message instead.)
 * @example
 * const chat = usePaiChat({ threadId, messages: snapshot.messages });
 * <PaiProvider threadId={threadId} onAnswer={chat.answer}>...</PaiProvider>
 */
export function usePaiChat<MESSAGE extends UIMessage = UIMessage>(
  options: UsePaiChatOptions<MESSAGE>,
): UsePaiChatHelpers<MESSAGE> {
  const api = (options.api ?? "/api").replace(/\/$/, "");
  const { threadId, headers } = options;
  const headerKey = JSON.stringify(headers ?? {});
  // biome-ignore lint/correctness/useExhaustiveDependencies: headers are compared by value
  const transport = useMemo(
    () =>
      new DefaultChatTransport<MESSAGE>({
        api: `${api}/chat`,
        // the server reads only the new message (the thread is stored there): long threads stay small
        prepareSendMessagesRequest: lastMessageOnly,
        ...(headers ? { headers } : {}),
      }),
    [api, headerKey],
  );
  const callbacks = useRef({ onRunEnd: options.onRunEnd, onError: options.onError });
  callbacks.current = { onRunEnd: options.onRunEnd, onError: options.onError };
  const chat = useChat<MESSAGE>({
    id: threadId,
    transport,
    ...(options.messages ? { messages: options.messages } : {}),
    onFinish: () => callbacks.current.onRunEnd?.(),
    onError: (error) => callbacks.current.onError?.(error),
  });
  const messagesRef = useRef(chat.messages);
  messagesRef.current = chat.messages;
  const { setMessages } = chat;
  const [following, setFollowing] = useState(false);
  const followController = useRef<AbortController | undefined>(undefined);

  const follow = useCallback(
    async (stream: ReadableStream<Uint8Array>, signal?: AbortSignal) => {
      const controller = new AbortController();
      followController.current = controller;
      const onAbort = () => controller.abort(signal?.reason);
      signal?.addEventListener("abort", onAbort, { once: true });
      setFollowing(true);
      try {
        await followRunStream({
          stream,
          messages: messagesRef.current,
          signal: controller.signal,
          onMessage: (message) => setMessages((all) => upsertMessage(all, message)),
        });
      } catch (error) {
        if (!controller.signal.aborted) throw error;
      } finally {
        signal?.removeEventListener("abort", onAbort);
        if (followController.current === controller) followController.current = undefined;
        setFollowing(false);
      }
    },
    [setMessages],
  );

  // biome-ignore lint/correctness/useExhaustiveDependencies: headers are compared by value
  const reloadMessages = useCallback(
    async (signal?: AbortSignal) => {
      for (let attempt = 0; attempt < 20 && !signal?.aborted; attempt++) {
        const response = await fetch(`${api}/threads/${encodeURIComponent(threadId)}`, {
          ...(headers ? { headers } : {}),
          ...(signal ? { signal } : {}),
        });
        if (!response.ok) return;
        const snapshot = (await response.json()) as { messages: MESSAGE[]; activeRunId: string | null };
        if (snapshot.activeRunId === null) {
          setMessages(snapshot.messages);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    [api, threadId, headerKey, setMessages],
  );

  // biome-ignore lint/correctness/useExhaustiveDependencies: headers are compared by value
  const reconnect = useCallback(
    async (signal?: AbortSignal) => {
      const response = await fetch(`${api}/chat/${encodeURIComponent(threadId)}/stream`, {
        ...(headers ? { headers } : {}),
        ...(signal ? { signal } : {}),
      });
      if (response.status === 204 || !response.body) return false;
      if (!response.ok) throw await PaiResponseError.fromResponse(response);
      await follow(response.body, signal);
      // a replayed run's new user message is stored when the run ends: take the stored thread
      await reloadMessages(signal);
      callbacks.current.onRunEnd?.();
      return true;
    },
    [api, threadId, headerKey, follow, reloadMessages],
  );

  // biome-ignore lint/correctness/useExhaustiveDependencies: headers are compared by value
  const answer = useCallback(
    async ({ action, answer: value, onAccepted }: PendingActionAnswerEvent) => {
      const result = await answerAction({
        api,
        threadId: action.threadId || threadId,
        action,
        answer: value,
        stream: true,
        ...(headers ? { headers } : {}),
      });
      if (result.status === "accepted") onAccepted?.();
      if (result.stream) {
        await follow(result.stream);
        callbacks.current.onRunEnd?.();
      } else {
        // settled earlier, or other actions still wait: show the stored state
        await reloadMessages();
      }
      return result;
    },
    [api, threadId, headerKey, follow, reloadMessages],
  );

  // biome-ignore lint/correctness/useExhaustiveDependencies: headers are compared by value
  const stop = useCallback(async () => {
    followController.current?.abort();
    await fetch(`${api}/chat/${encodeURIComponent(threadId)}/stop`, {
      method: "POST",
      ...(headers ? { headers } : {}),
    }).catch(() => undefined);
    await chat.stop();
  }, [api, threadId, headerKey, chat.stop]);

  const resume = useRef(options.resume ?? true);
  resume.current = options.resume ?? true;
  // biome-ignore lint/correctness/useExhaustiveDependencies: reconnect once per thread, as `resume` says then
  useEffect(() => {
    if (!resume.current) return;
    const controller = new AbortController();
    reconnect(controller.signal).catch((error: unknown) => {
      if (!controller.signal.aborted) callbacks.current.onError?.(toError(error));
    });
    return () => controller.abort();
  }, [threadId]);

  const messages = useMemo(() => placeActionParts(chat.messages), [chat.messages]);

  return {
    ...chat,
    messages,
    answer,
    reconnect,
    stop,
    following,
    busy: following || chat.status === "submitted" || chat.status === "streaming",
  };
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
