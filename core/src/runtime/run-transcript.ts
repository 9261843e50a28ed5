import { generateId, readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import { type PublicPendingAction, publicAction } from "../actions/public-action.ts";
import type { ToolEnd } from "../actions/tool-end.ts";
import {
  applyToolPartUpdate,
  awaitAnswers,
  endedCall,
  openToolCallIds,
  type ToolPartUpdate,
  toolPartOf,
  toolPartUpdateChunks,
  withToolEnd,
} from "../actions/tool-part-updates.ts";
import type { PendingActionRecord } from "../threads/thread-store.ts";
import { createRunBroadcast } from "./run-broadcast.ts";

/** A `data-*` chunk of PAI's own (tool data, pending actions, capability status). */
type DataChunk = { type: string; id?: string; data: unknown; transient?: boolean };

/** A call whose execution starts: it is put on the reply so far if its chunk has not arrived yet. */
export interface StartingCall {
  toolCallId: string;
  /** The registration name (the part's type is `tool-<name>`). */
  toolName: string;
  toolId: string;
  input: unknown;
}

/** How the run closes its transcript. */
export interface TranscriptClose {
  /** Calls waiting for an answer (their SDK result was a placeholder): they stay open. */
  waiting: ReadonlySet<string>;
  /** How calls still open end (the run was stopped); `undefined` when the run ended on its own. */
  openCalls: ToolEnd | undefined;
}

/**
 * The one owner of a run's messages: the thread as the run found it, every change PAI makes to it (answered
 * actions, calls PAI ended, data parts, calls waiting for an answer) and the model's reply. It is also the run's
 * stream, so what a live client sees and what is stored come from the same records.
 */
export interface RunTranscript {
  /** The thread as the run sees it: the stored messages, plus the user's new message once appended. */
  readonly messages: UIMessage[];
  /** Appends the user's new message (before the model runs). */
  appendUserMessage(message: UIMessage): void;
  /** Sends one of PAI's chunks to the stream; data parts are also kept for the reply. */
  write(chunk: UIMessageChunk): void;
  /**
   * Applies `update` to its tool part, now and in the final messages. The part's new state is streamed when the
   * call is in the message this run's stream continues; a call in an earlier message is updated in storage
   * only, since a client's stream can only change the message it streams.
   */
  apply(update: ToolPartUpdate): void;
  /** {@link apply} for an answered or superseded action, streaming the action's new state too. */
  settle(update: ToolPartUpdate, action: PendingActionRecord): void;
  /** Records why PAI ended a call the model loop reports as failed (shown on its part, streamed and stored). */
  endCall(toolCallId: string, end: ToolEnd): void;
  /** Streams the model loop's UI stream until it ends. */
  pipe(source: ReadableStream<UIMessageChunk>): Promise<void>;
  /** The whole thread as the model loop ended it (`toUIMessageStream`'s `onFinish`). */
  replyFinished(messages: UIMessage[]): void;
  /**
   * The thread with the reply as streamed so far, `calls` included: what a checkpoint stores while the run goes
   * on, so a crash leaves its open calls to close.
   */
  soFar(calls: readonly StartingCall[]): Promise<UIMessage[]>;
  /**
   * Returns the messages to store: the model's (or, when it never finished, the thread as found), with PAI's data
   * parts on the reply, answered actions applied, calls PAI ended marked, `waiting` calls awaiting answers
   * (approvals as `approval-requested`), and every other open call of the reply ended (streamed to clients).
   */
  close(options: TranscriptClose): UIMessage[];
  /**
   * Ends the stream. The run calls it once it is stored and its thread is free, so a client that sees the stream
   * end can answer an approval or send the next message at once.
   */
  end(): void;
  /** A new reader of the whole run, from its first chunk. */
  subscribe(): ReadableStream<UIMessageChunk>;
}

/**
 * Creates a run's transcript over the stored `messages` (taken over: changed in place). Calls in `hidden` got a
 * placeholder result from the SDK that clients never see.
 */
export function createRunTranscript(options: {
  messages: UIMessage[];
  hidden: ReadonlySet<string>;
  /** Whether the run continues the thread's last (assistant) message rather than answering a new user message. */
  continuing: boolean;
  /** Hears every chunk sent to the stream, in order (the run stores them for followers in other processes). */
  onChunk?: (chunk: UIMessageChunk) => void;
}): RunTranscript {
  const { messages, hidden, onChunk } = options;
  const ends = new Map<string, ToolEnd>();
  const dataParts: DataChunk[] = [];
  const updates: ToolPartUpdate[] = [];
  let finished: UIMessage[] | undefined;
  /** The message clients following the run are building. */
  let streamedId =
    options.continuing && messages.at(-1)?.role === "assistant" ? messages.at(-1)!.id : undefined;

  /** The approvals of calls waiting on a suspension: tool call id → approval id (the pending action's id). */
  const approvals = new Map<string, string>();
  /** Calls whose approval goes out once their part is on the client (when the SDK reports their placeholder). */
  const approvalsDue = new Set<string>();

  /**
   * What clients see of a chunk: a hidden call's placeholder result is dropped (or becomes its approval request),
   * a call PAI ended says why.
   */
  const shown = (chunk: UIMessageChunk): UIMessageChunk | undefined => {
    if (chunk.type === "start" && chunk.messageId !== undefined) streamedId = chunk.messageId;
    // A waiting call's placeholder result never reaches a client: an approval is requested in its place.
    if (chunk.type === "tool-output-available" && hidden.has(chunk.toolCallId))
      return approvalsDue.delete(chunk.toolCallId) ? approvalRequest(chunk.toolCallId) : undefined;
    const end = chunk.type === "tool-output-error" ? ends.get(chunk.toolCallId) : undefined;
    if (chunk.type === "tool-output-error" && end)
      return { ...chunk, toolMetadata: withToolEnd(chunk.toolMetadata, end) as never };
    return chunk;
  };
  const broadcast = createRunBroadcast<UIMessageChunk>((chunk) => {
    const sent = shown(chunk);
    if (sent !== undefined) onChunk?.(sent);
    return sent;
  });

  /** The AI SDK's approval request for a suspended call (`approval-requested` on the client). */
  const approvalRequest = (toolCallId: string): UIMessageChunk | undefined => {
    const approvalId = approvals.get(toolCallId);
    return approvalId === undefined ? undefined : { type: "tool-approval-request", approvalId, toolCallId };
  };

  /**
   * Follows the run's pending actions: a suspended call's approval is requested at once when its part is already
   * in the message clients build (a resumed call that suspends again), else once the SDK has streamed its part.
   */
  const trackAction = (action: PublicPendingAction) => {
    if (action.status !== "pending") {
      if (approvals.get(action.toolCallId) === action.actionId) approvals.delete(action.toolCallId);
      approvalsDue.delete(action.toolCallId);
      return;
    }
    if (action.kind !== "suspend") return;
    approvals.set(action.toolCallId, action.actionId);
    const streamed = messages.find((message) => message.id === streamedId);
    if (streamed && toolPartOf([streamed], action.toolCallId)) {
      const request = approvalRequest(action.toolCallId);
      if (request) broadcast.push(request);
    } else approvalsDue.add(action.toolCallId);
  };

  const write = (chunk: UIMessageChunk) => {
    broadcast.push(chunk);
    if (chunk.type.startsWith("data-")) dataParts.push(chunk as DataChunk);
    if (chunk.type === "data-pai-action") trackAction((chunk as DataChunk).data as PublicPendingAction);
  };

  const streamPart = (final: UIMessage[], update: ToolPartUpdate) => {
    const streamed = streamedId === undefined ? undefined : final.find((m) => m.id === streamedId);
    const part = streamed && toolPartOf([streamed], update.toolCallId);
    if (!part) return;
    for (const chunk of toolPartUpdateChunks(update, part)) broadcast.push(chunk as UIMessageChunk);
  };

  const apply = (update: ToolPartUpdate) => {
    applyToolPartUpdate(messages, update);
    updates.push(update);
    streamPart(messages, update);
  };

  return {
    messages,
    appendUserMessage(message) {
      messages.push(message);
    },
    write,
    apply,
    settle(update, action) {
      apply(update);
      write({ type: "data-pai-action", id: action.id, data: publicAction(action) } as UIMessageChunk);
    },
    endCall(toolCallId, end) {
      ends.set(toolCallId, end);
    },
    pipe: (source) => broadcast.pipe(source),
    replyFinished(final) {
      finished = final;
    },
    async soFar(calls) {
      const continued = streamedId !== undefined && messages.at(-1)?.id === streamedId;
      const base = continued ? structuredClone(messages.at(-1)!) : undefined;
      let reply: UIMessage | undefined = base;
      for await (const message of readUIMessageStream({
        ...(base ? { message: base } : {}),
        stream: broadcast.replay(),
      }))
        reply = message;
      reply ??= { id: generateId(), role: "assistant", parts: [] };
      for (const call of calls) {
        if (toolPartOf([reply], call.toolCallId)) continue;
        reply.parts.push({
          type: `tool-${call.toolName}`,
          toolCallId: call.toolCallId,
          state: "input-available",
          input: call.input,
          toolMetadata: { paiToolId: call.toolId },
        } as UIMessage["parts"][number]);
      }
      return [...(continued ? messages.slice(0, -1) : messages), reply];
    },
    close({ waiting, openCalls }) {
      const final = finished ?? messages;
      storeDataParts(final, dataParts);
      for (const update of updates) applyToolPartUpdate(final, update);
      for (const [toolCallId, end] of ends) {
        const part = toolPartOf(final, toolCallId);
        if (part?.state === "output-error") part.toolMetadata = withToolEnd(part.toolMetadata, end);
      }
      if (waiting.size > 0) awaitAnswers(final, waiting, approvals);
      const reply = final.at(-1);
      if (openCalls && reply?.role === "assistant") {
        for (const toolCallId of openToolCallIds(reply, waiting)) {
          const update = endedCall(toolCallId, openCalls);
          applyToolPartUpdate(final, update);
          streamPart(final, update);
        }
      }
      return final;
    },
    end: () => broadcast.end(),
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
