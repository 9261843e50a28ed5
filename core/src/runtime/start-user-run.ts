import { generateId, type UIMessage } from "ai";
import { PaiError } from "../errors/pai-error.ts";
import type { ThreadRecord } from "../threads/thread-store.ts";
import type { AgentRun } from "./agent-run.ts";
import type { RuntimeParts } from "./runtime-parts.ts";

/** What `runtime.run` accepts. */
export interface RunOptions {
  agentId: string;
  /** Continue this thread; a new one is created when left out or unknown. */
  threadId?: string;
  /** The caller, parsed with the agent's `identity` schema. */
  identity?: unknown;
  /** The user's message: text or a full `UIMessage`. */
  message: string | UIMessage;
  /**
   * Runs `message` in place of this earlier user message of the thread (an edit; with the stored message itself, a
   * regeneration of its answer). The thread is first rewound to just before it, as `rewindThread` rewinds (later
   * messages dropped, their pending actions cancelled, the resources restored and their processes stopped), under
   * the reservation the run then starts under: no other message or run gets in between. The new message keeps its
   * own id (`useChat` gives an edited message the id of the one it replaces). A message the thread does not have is
   * `UNKNOWN_MESSAGE`; one that is not the user's, `INVALID_ARGUMENT`.
   */
  replaceMessageId?: string;
  /** Untrusted data from the client, passed to resolvers as data only. */
  clientData?: unknown;
  /** Aborting it cancels the run. */
  signal?: AbortSignal;
}

/**
 * `runtime.run`: checks the message against the limits, parses the caller's identity, finds the thread (the caller
 * must own it, and it must be the agent's) or makes a new one, reserves it and starts the run.
 */
export async function startUserRun(parts: RuntimeParts, options: RunOptions): Promise<AgentRun> {
  const { pai, store, access } = parts;
  parts.assertOpen();
  parts.limits.checkRun(options);
  const agent = pai.agent(options.agentId);
  const identity = await access.parseIdentity(agent, options.identity);
  const identityKey = parts.identityKeyOf(identity);
  const model = parts.modelOf(agent);
  const threadId = options.threadId ?? generateId();
  const existing = await store.getThread(threadId);
  if (existing) access.assertOwner(existing, identityKey);
  const { replaceMessageId } = options;
  if (replaceMessageId !== undefined && !existing)
    throw new PaiError("UNKNOWN_MESSAGE", `thread "${threadId}" has no message "${replaceMessageId}"`, {
      details: { threadId, messageId: replaceMessageId },
    });
  if (existing && existing.agentId !== agent.id) {
    throw new PaiError(
      "INVALID_ARGUMENT",
      `thread "${threadId}" belongs to agent "${existing.agentId}", not "${agent.id}"`,
    );
  }
  const userMessage = toUserMessage(options.message);
  const now = Date.now();
  const thread: ThreadRecord = existing ?? {
    id: threadId,
    agentId: agent.id,
    ownerKey: identityKey,
    title: titleOf(userMessage),
    createdAt: now,
    updatedAt: now,
  };
  const reservation = await parts.runs.reserve(threadId, generateId(), "already has a run in progress");
  if (replaceMessageId !== undefined) {
    try {
      await parts.rewinds.rewindBefore({ threadId, beforeMessageId: replaceMessageId, identityKey });
    } catch (error) {
      await reservation.releaseUnlessStarted();
      throw error;
    }
  }
  return reservation.start({
    agent,
    model,
    identity,
    identityKey,
    thread,
    userMessage,
    clientData: options.clientData,
    signal: options.signal,
  });
}

function toUserMessage(message: string | UIMessage): UIMessage {
  if (typeof message !== "string") {
    if (message.role !== "user") throw new PaiError("INVALID_ARGUMENT", "a run starts from a user message");
    return message;
  }
  return { id: generateId(), role: "user", parts: [{ type: "text", text: message }] };
}

function titleOf(message: UIMessage): string | undefined {
  const text = message.parts.find((part) => part.type === "text");
  return text?.type === "text" ? text.text.slice(0, 80) : undefined;
}
