import {
  parseJsonEventStream,
  readUIMessageStream,
  type UIMessage,
  type UIMessageChunk,
  uiMessageChunkSchema,
} from "ai";

/** What {@link followRunStream} accepts. */
export interface FollowRunStreamOptions<MESSAGE extends UIMessage> {
  /** A run's UI message stream as SSE bytes: a continuation after an answer, or `GET /chat/:id/stream`. */
  stream: ReadableStream<Uint8Array>;
  /** The conversation as the client has it when the stream starts. */
  messages: readonly MESSAGE[];
  /** Every state of the assistant message the stream writes (replace by `id`, or append when new). */
  onMessage: (message: MESSAGE) => void;
  signal?: AbortSignal;
}

/**
 * Applies a run's stream to a conversation. A continuation (after an approval) carries on the last assistant
 * message, whose tool part it settles first; a run started by a new message writes a new one. Resolves with
 * the final state of the written message.
 * @example
 * const { stream } = await answerAction({ action, answer, stream: true });
 * if (stream) await followRunStream({ stream, messages, onMessage: (m) => setMessages((all) => upsertMessage(all, m)) });
 */
export async function followRunStream<MESSAGE extends UIMessage>(
  options: FollowRunStreamOptions<MESSAGE>,
): Promise<MESSAGE | undefined> {
  const last = options.messages.at(-1);
  const base = last?.role === "assistant" ? structuredClone(last) : undefined;
  const chunks = parseJsonEventStream({ stream: options.stream, schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream<{ success: boolean; value?: unknown; error?: unknown }, UIMessageChunk>({
      transform(result, controller) {
        if (!result.success) throw result.error;
        controller.enqueue(result.value as UIMessageChunk);
      },
    }),
  );
  const reader = options.signal ? abortable(chunks, options.signal) : chunks;
  let final: MESSAGE | undefined;
  for await (const message of readUIMessageStream<MESSAGE>({
    stream: reader,
    terminateOnError: true,
    ...(base ? { message: base } : {}),
  })) {
    final = message;
    options.onMessage(message);
  }
  return final;
}

/** Replaces the message with `message.id`, or appends it. */
export function upsertMessage<MESSAGE extends UIMessage>(
  messages: readonly MESSAGE[],
  message: MESSAGE,
): MESSAGE[] {
  const index = messages.findIndex((candidate) => candidate.id === message.id);
  if (index < 0) return [...messages, message];
  const next = [...messages];
  next[index] = message;
  return next;
}

function abortable<T>(stream: ReadableStream<T>, signal: AbortSignal): ReadableStream<T> {
  const reader = stream.getReader();
  const onAbort = () => void reader.cancel(signal.reason).catch(() => undefined);
  signal.addEventListener("abort", onAbort, { once: true });
  return new ReadableStream<T>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) {
        signal.removeEventListener("abort", onAbort);
        controller.close();
      } else controller.enqueue(value);
    },
    cancel(reason) {
      signal.removeEventListener("abort", onAbort);
      return reader.cancel(reason);
    },
  });
}
