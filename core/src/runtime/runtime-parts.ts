import type { LanguageModel } from "ai";
import type { Pai, RegisteredAgent } from "../agents/create-pai.ts";
import type { ThreadRewinds } from "../checkpoints/rewind-thread.ts";
import type { OwnerRegistry } from "../ownership/owner-registry.ts";
import type { ThreadStore } from "../threads/thread-store.ts";
import type { LocalRuns } from "./local-runs.ts";
import type { MessageLimitChecks } from "./message-limits.ts";
import type { ThreadAccess } from "./thread-access.ts";

/**
 * What the runtime's operations share (`run`, `respond`, the thread reads, subagents): made once by
 * `createAgentRuntime`.
 */
export interface RuntimeParts {
  pai: Pai;
  store: ThreadStore;
  /** This process as an owner (its id, and which owners are alive). */
  owners: OwnerRegistry;
  access: ThreadAccess;
  /** Maps a parsed identity to its identity key (thread owner, `user` lease key). */
  identityKeyOf(identity: unknown): string;
  limits: MessageLimitChecks;
  runs: LocalRuns;
  /** Rewinds and forks threads (`rewindThread`, `forkThread`, a run that replaces a message). */
  rewinds: ThreadRewinds;
  /** The model a run of `agent` uses: the runtime's override, the agent's own, or the runtime's default. */
  modelOf(agent: RegisteredAgent): LanguageModel;
  /** Throws `STORE_CLOSED` once the runtime is closed. */
  assertOpen(): void;
}
