import { z } from "zod";
import type { PendingActionStatus } from "../threads/thread-store.ts";

/**
 * An answer to a pending action.
 * - `resume`: re-enters a suspended `execute` with `ctx.entry = { type: "resume", name, resume }`.
 * - `success`: the output of a client-executed tool, validated against its `outputSchema`.
 * - `deny`: the model gets an execution-denied result with `reason`.
 * - `skip`: the model gets a synthetic output (`output`, default `{ skipped: true }`).
 * - `cancel`: closes the action; the model gets an error saying so.
 * - `fail`: the model gets a tool error with `message`.
 */
export type PendingActionAnswer =
  | { type: "resume"; resume: unknown }
  | { type: "success"; output: unknown }
  | { type: "deny"; reason?: string | undefined }
  | { type: "skip"; output?: unknown }
  | { type: "cancel"; reason?: string | undefined }
  | { type: "fail"; message: string };

export const pendingActionAnswerSchema: z.ZodType<PendingActionAnswer> = z.discriminatedUnion("type", [
  z.object({ type: z.literal("resume"), resume: z.unknown() }),
  z.object({ type: z.literal("success"), output: z.unknown() }),
  z.object({ type: z.literal("deny"), reason: z.string().optional() }),
  z.object({ type: z.literal("skip"), output: z.unknown().optional() }),
  z.object({ type: z.literal("cancel"), reason: z.string().optional() }),
  z.object({ type: z.literal("fail"), message: z.string() }),
]) as z.ZodType<PendingActionAnswer>;

/** The status an action takes when `answer` settles it. */
export function statusOfAnswer(answer: PendingActionAnswer): PendingActionStatus {
  switch (answer.type) {
    case "resume":
      return "resumed";
    case "success":
      return "succeeded";
    case "deny":
      return "denied";
    case "skip":
      return "skipped";
    case "cancel":
      return "cancelled";
    case "fail":
      return "failed";
  }
}
