import type { PendingActionRecord } from "../threads/thread-store.ts";
import type { ToolEnd } from "./tool-end.ts";

/** How a tool call settled, as the model and the thread will see it. */
export type CallOutcome =
  | { type: "output"; output: unknown }
  /** `end`: PAI ended the call (a failed provision); recorded on the part for UIs. */
  | { type: "error"; message: string; end?: ToolEnd }
  | { type: "denied"; reason: string | undefined; actionId: string }
  | { type: "pending"; action: PendingActionRecord };
