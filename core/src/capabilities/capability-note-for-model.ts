import type { CapabilityStatusEvent } from "./capability-manager.ts";

/**
 * What the model is told about a stored `data-pai-capability` part (`convertToModelMessages`'s
 * `convertDataPart`): only a wake from hibernation, which changes what the resource still has; every other
 * status is for the UI.
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
  if (event?.status !== "woken" || typeof event.capability !== "string") return undefined;
  return {
    type: "text",
    text: `[the ${event.capability} had hibernated while idle and was woken: its files are kept, processes started before are gone]`,
  };
}
