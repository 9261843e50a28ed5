import type { CapabilityStatusEvent } from "./capability-status-event.ts";

/**
 * What the model is told about a stored `data-pai-capability` part (`convertToModelMessages`'s
 * `convertDataPart`): only a wake from hibernation and a restart after the resource stopped on its own, which
 * change what the resource still has; every other status is for the UI.
 * @example
 * capabilityNoteForModel({ type: "data-pai-capability", data: { capability: "sandbox", status: "woken", ... } })
 * // { type: "text", text: "[the sandbox had hibernated while idle and was woken: ...]" }
 */
export function capabilityNoteForModel(part: {
  type: string;
  data: unknown;
}): { type: "text"; text: string } | undefined {
  if (part.type !== "data-pai-capability") return undefined;
  const event = part.data as Partial<CapabilityStatusEvent> | null;
  if (typeof event?.capability !== "string") return undefined;
  if (event.status === "woken") {
    return {
      type: "text",
      text: `[the ${event.capability} had hibernated while idle and was woken: its files are kept, processes started before are gone]`,
    };
  }
  if (event.status === "restarted") {
    const why = typeof event.reason === "string" ? ` (${event.reason})` : "";
    return {
      type: "text",
      text: `[the ${event.capability} had stopped${why} and was started again: its files are kept, processes started before are gone]`,
    };
  }
  return undefined;
}
