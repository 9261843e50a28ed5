import { capabilityStatusOf } from "./capability-status-of.ts";

/**
 * What to tell the user about a message part that reports a capability woken from hibernation (status `woken`):
 * the call waited for it, its files are kept and what ran in it before is gone. `undefined` for any other part.
 * @example
 * wokenNoteOf(part) // "The sandbox had hibernated while idle and was woken (0.2 s): its files are kept, …"
 */
export function wokenNoteOf(part: { type: string; data?: unknown }): string | undefined {
  const event = capabilityStatusOf(part);
  if (event?.status !== "woken") return undefined;
  const took = typeof event.durationMs === "number" ? ` (${(event.durationMs / 1000).toFixed(1)} s)` : "";
  return `The ${event.capability} had hibernated while idle and was woken${took}: its files are kept, processes started before are gone.`;
}
