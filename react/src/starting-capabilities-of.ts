import type { CapabilityStatusEvent } from "@pai/core";
import type { UIMessage } from "ai";

/**
 * The capabilities a message's run is starting right now: those whose latest `data-pai-capability` status is
 * `provisioning` (a sandbox being provisioned for the first tool that needs it), in order of appearance.
 * @example
 * startingCapabilitiesOf(message) // ["sandbox"] while the conversation's sandbox starts
 */
export function startingCapabilitiesOf(message: UIMessage): string[] {
  const latest = new Map<string, CapabilityStatusEvent>();
  for (const part of message.parts) {
    if (part.type !== "data-pai-capability") continue;
    const event = (part as { data?: unknown }).data;
    if (!isStatusEvent(event)) continue;
    const key = `${event.capability}\0${event.lifetime}`;
    latest.set(key, event);
  }
  const starting: string[] = [];
  for (const event of latest.values()) {
    if (event.status === "provisioning" && !starting.includes(event.capability))
      starting.push(event.capability);
  }
  return starting;
}

function isStatusEvent(value: unknown): value is CapabilityStatusEvent {
  if (typeof value !== "object" || value === null) return false;
  const record = value as Record<string, unknown>;
  return typeof record.capability === "string" && typeof record.status === "string";
}
