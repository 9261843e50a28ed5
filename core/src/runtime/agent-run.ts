import type { UIMessage, UIMessageChunk } from "ai";
import type { RunStatus } from "../threads/thread-store.ts";

/** How a run ended. */
export interface RunResult {
  status: Exclude<RunStatus, "running" | "interrupted">;
  runId: string;
  threadId: string;
  /** The whole thread after the run, as stored. */
  messages: UIMessage[];
  /** The text of the run's last assistant message. */
  text: string;
  /** Redacted error message when `status` is `failed`. */
  error?: string;
}

/** A started run. Read `stream` for the UI message stream, or just await `done`. */
export interface AgentRun {
  readonly runId: string;
  readonly threadId: string;
  /** The AI SDK UI message stream (what `useChat` consumes). Reading it is optional. */
  readonly stream: ReadableStream<UIMessageChunk>;
  /** Settles once the run has ended and its thread is stored. */
  readonly done: Promise<RunResult>;
  /** Stops the run (user Stop): it ends `cancelled` and running tools see their signal fire. */
  cancel(): void;
}
