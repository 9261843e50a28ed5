import type { LanguageModel, UIMessage } from "ai";
import type { RegisteredAgent } from "../agents/create-pai.ts";
import type { CapabilityManager } from "../capabilities/capability-manager.ts";
import type { ThreadCheckpoints } from "../checkpoints/thread-checkpoints.ts";
import type { RuntimeTelemetry } from "../telemetry/run-telemetry.ts";
import type { ThreadRecord, ThreadStore } from "../threads/thread-store.ts";
import type { SubagentRunner } from "./subagent-runner.ts";

/** What the runtime lends a run. */
export interface RunDependencies {
  store: ThreadStore;
  /** The runtime process's owner id, recorded on the run. */
  ownerId: string;
  capabilities: CapabilityManager;
  /** Runs subagents (`ctx.agents.run`) as the run's caller. */
  subagents: (caller: { identity: unknown; clientData: unknown }) => SubagentRunner;
  /** Called once the run has ended and its thread is stored; the run's `done` waits for it. */
  onEnded: (runId: string, threadId: string) => Promise<void>;
  /** Checkpoints the resources a run used once it ended (absent: the runtime takes none). */
  checkpoints?: ThreadCheckpoints | undefined;
  /** Errors of work beside the run (storing its stream for followers). */
  onBackgroundError: (error: unknown) => void;
  /** The runtime's telemetry settings: the run's span, and what `streamText` is told. */
  telemetry: RuntimeTelemetry;
}

/** One run to start: a new user message, or (without one) the continuation after answered pending actions. */
export interface StartRunOptions {
  /** The run's id, chosen by the caller (it took the thread's lease for it). */
  runId: string;
  agent: RegisteredAgent;
  model: LanguageModel;
  /** The parsed identity. */
  identity: unknown;
  identityKey: string;
  thread: ThreadRecord;
  /** The new user message; absent for a continuation. */
  userMessage: UIMessage | undefined;
  clientData: unknown;
  signal: AbortSignal | undefined;
}
