import { generateId, type UIMessage, type UIMessageChunk } from "ai";
import { publicAction } from "../actions/public-action.ts";
import {
  applyToolPartUpdate,
  awaitAnswers,
  type ToolPartUpdate,
  toolPartUpdateChunks,
} from "../actions/tool-part-updates.ts";
import type { PendingActionRecord } from "../threads/thread-store.ts";
import { createRunBroadcast } from "./run-broadcast.ts";

/** A `data-*` chunk of PAI's own (tool data, pending actions, capability status). */
type DataChunk = { type: string; id?: string; data: unknown; transient?: boolean };

/**
 * The one owner of a run's messages: the thread as the run found it, every change PAI makes to it (answered
 * actions, data parts, calls waiting for an answer) and the model's reply. It is also the run's stream, so
 * what a live client sees and what is stored come from the same records.
 */
export interface RunTranscript {
  /** The thread as the run sees it: the stored messages, plus the user's new message once appended. */
  readonly messages: UIMessage[];
  /** Appends the user's new message (before the model runs). */
  appendUserMessage(message: UIMessage): void;
  /** Sends one of PAI's chunks to the stream; data parts are also kept for the reply. */
  write(chunk: UIMessageChunk): void;
  /**
   * Applies a settled action to its tool part, now and in the final messages, and streams the action's new
   * state. The part's new state is streamed too when the call is in the message this run's stream continues;
   * a call in an earlier message (superseded by a new user message) is updated in storage only, since a
   * client's stream can only change the message it streams.
   */
  settle(update: ToolPartUpdate, action: PendingActionRecord): void;
  /** Streams the model loop's UI stream until it ends. */
  pipe(source: ReadableStream<UIMessageChunk>): Promise<void>;
  /** The whole thread as the model loop ended it (`toUIMessageStream`'s `onFinish`). */
  replyFinished(messages: UIMessage[]): void;
  /**
   * Ends the stream and returns the messages to store: the model's (or, when it never finished, the thread as
   * found), with PAI's data parts on the reply, answered actions applied, and `waiting` calls awaiting answers.
   */
  close(waiting: ReadonlySet<string>): UIMessage[];
  /** A new reader of the whole run, from its first chunk. */
  subscribe(): ReadableStream<UIMessageChunk>;
}

/**
 * Creates a run's transcript over the stored `messages` (taken over: changed in place). `hidden` names calls
 * whose SDK result is a placeholder, never shown to clients.
 */
export function createRunTranscript(options: {
  messages: UIMessage[];
  hidden: ReadonlySet<string>;
  /** Whether the run continues the thread's last (assistant) message rather than answering a new user message. */
  continuing: boolean;
}): RunTranscript {
  const { messages, hidden } = options;
  const continued = options.continuing ? messages.at(-1) : undefined;
  const broadcast = createRunBroadcast<UIMessageChunk>(
    (chunk) => !(chunk.type === "tool-output-available" && hidden.has(chunk.toolCallId)),
  );
  const dataParts: DataChunk[] = [];
  const updates: ToolPartUpdate[] = [];
  let finished: UIMessage[] | undefined;

  const write = (chunk: UIMessageChunk) => {
    broadcast.push(chunk);
    if (chunk.type.startsWith("data-")) dataParts.push(chunk as DataChunk);
  };

  return {
    messages,
    appendUserMessage(message) {
      messages.push(message);
    },
    write,
    settle(update, action) {
      applyToolPartUpdate(messages, update);
      updates.push(update);
      if (continued?.role === "assistant" && hasCall(continued, update.toolCallId)) {
        for (const chunk of toolPartUpdateChunks(update)) write(chunk as UIMessageChunk);
      }
      write({ type: "data-pai-action", id: action.id, data: publicAction(action) } as UIMessageChunk);
    },
    pipe: (source) => broadcast.pipe(source),
    replyFinished(final) {
      finished = final;
    },
    close(waiting) {
      broadcast.end();
      const final = finished ?? messages;
      storeDataParts(final, dataParts);
      for (const update of updates) applyToolPartUpdate(final, update);
      if (waiting.size > 0) awaitAnswers(final, waiting);
      return final;
    },
    subscribe: () => broadcast.subscribe(),
  };
}

type DataPart = { type: string; id?: string; data?: unknown };

/**
 * Stores PAI's data parts: one with the id of a part already in the thread replaces it where it is (a
 * superseded action's state stays beside its call); any other goes on the run's reply (the last assistant
 * message, made when there is none).
 */
function storeDataParts(messages: UIMessage[], chunks: DataChunk[]): void {
  const kept = chunks.filter((chunk) => chunk.transient !== true);
  if (kept.length === 0) return;
  let reply = messages.at(-1);
  if (reply?.role !== "assistant") {
    reply = { id: generateId(), role: "assistant", parts: [] };
    messages.push(reply);
  }
  const replyParts = reply.parts as DataPart[];
  for (const chunk of kept) {
    const part = { type: chunk.type, ...(chunk.id !== undefined ? { id: chunk.id } : {}), data: chunk.data };
    if (chunk.id === undefined || !replaceById(messages, part)) replyParts.push(part);
  }
}

/** Replaces the latest part of the thread with `part`'s type and id; false when there is none. */
function replaceById(messages: UIMessage[], part: DataPart): boolean {
  for (let m = messages.length - 1; m >= 0; m--) {
    const parts = messages[m]!.parts as DataPart[];
    const index = parts.findIndex((p) => p.type === part.type && p.id === part.id);
    if (index >= 0) {
      parts[index] = part;
      return true;
    }
  }
  return false;
}

function hasCall(message: UIMessage, toolCallId: string): boolean {
  return message.parts.some((part) => (part as { toolCallId?: unknown }).toolCallId === toolCallId);
}
