import { capabilityStatusOf } from "./capability-status-of.ts";

/**
 * What to tell the user about a message part that reports a capability woken from hibernation (status `woken`), or
 * started again after it had stopped on its own (status `restarted`, with why): the call waited for it, its files
 * are kept and what ran in it before is gone. `undefined` for any other part.
 * @example
 * wokenNoteOf(part) // "The sandbox had hibernated while idle and was woken (0.2 s): its files are kept, …"
 */
export function wokenNoteOf(part: { type: string; data?: unknown }): string | undefined {
  const event = capabilityStatusOf(part);
  if (event?.status !== "woken" && event?.status !== "restarted") return undefined;
  const took = typeof event.durationMs === "number" ? ` (${(event.durationMs / 1000).toFixed(1)} s)` : "";
  const what =
    event.status === "woken"
      ? "had hibernated while idle and was woken"
      : `had stopped${typeof event.reason === "string" ? ` (${event.reason})` : ""} and was started again`;
  return `The ${event.capability} ${what}${took}: its files are kept, processes started before are gone.`;
}
