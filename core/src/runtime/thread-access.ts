import { z } from "zod";
import type { Pai, RegisteredAgent } from "../agents/create-pai.ts";
import { PaiError } from "../errors/pai-error.ts";
import type { ThreadRecord, ThreadStore } from "../threads/thread-store.ts";

/**
 * Who may see and act on a thread: the one place the runtime and the HTTP handler decide it. An identity is
 * parsed with the thread's agent's `identity` schema and mapped to an identity key; a thread belongs to the key
 * that created it. Another identity's thread and an identity the schema rejects look the same: no such thread.
 */
export interface ThreadAccess {
  /** `identity` parsed by the agent's schema; `INVALID_IDENTITY` when it does not match. */
  parseIdentity(agent: RegisteredAgent, identity: unknown): Promise<unknown>;
  /** The identity key `identity` has for `agent`, or `undefined` when the agent's schema rejects it. */
  identityKeyFor(agent: RegisteredAgent, identity: unknown): Promise<string | undefined>;
  /** The thread, if it exists and `identity` owns it. */
  ownedThread(threadId: string, identity: unknown): Promise<ThreadRecord | undefined>;
  /** The thread `identity` owns; `NOT_FOUND` otherwise. */
  requireThread(threadId: string, identity: unknown): Promise<ThreadRecord>;
  /** Throws `NOT_FOUND` unless `identityKey` owns `thread`. */
  assertOwner(thread: ThreadRecord, identityKey: string): void;
}

/** Creates the access checks over a registry, a store and the runtime's identity-key mapping. */
export function createThreadAccess(options: {
  pai: Pai;
  store: ThreadStore;
  identityKey: (identity: unknown) => string;
}): ThreadAccess {
  const { pai, store, identityKey } = options;

  async function parse(agent: RegisteredAgent, identity: unknown) {
    const schema = agent.definition.identitySchema as z.ZodType | undefined;
    if (!schema) return { success: true as const, data: identity };
    return schema.safeParseAsync(identity);
  }

  const access: ThreadAccess = {
    async parseIdentity(agent, identity) {
      const parsed = await parse(agent, identity);
      if (parsed.success) return parsed.data;
      throw new PaiError(
        "INVALID_IDENTITY",
        `agent "${agent.id}": identity does not match its schema: ${z.prettifyError(parsed.error)}`,
        { cause: parsed.error, details: { agentId: agent.id } },
      );
    },
    async identityKeyFor(agent, identity) {
      const parsed = await parse(agent, identity);
      return parsed.success ? identityKey(parsed.data) : undefined;
    },
    async ownedThread(threadId, identity) {
      const thread = await store.getThread(threadId);
      if (!thread) return undefined;
      const key = await access.identityKeyFor(pai.agent(thread.agentId), identity);
      return key === thread.ownerKey ? thread : undefined;
    },
    async requireThread(threadId, identity) {
      const thread = await access.ownedThread(threadId, identity);
      if (!thread) throw unknownThread(threadId);
      return thread;
    },
    assertOwner(thread, key) {
      if (thread.ownerKey !== key) throw unknownThread(thread.id);
    },
  };
  return access;
}

/** The error for a thread that does not exist, or is not the caller's (the two look the same). */
export function unknownThread(threadId: string): PaiError {
  return new PaiError("NOT_FOUND", `no thread "${threadId}"`, { details: { threadId } });
}
