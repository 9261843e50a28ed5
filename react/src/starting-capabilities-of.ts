import type { CapabilityStatusEvent } from "@pai/core";
import type { UIMessage } from "ai";
import { capabilityStatusOf } from "./capability-status-of.ts";

/**
 * The capabilities a message's run is starting right now: those whose latest `data-pai-capability` status is
 * `provisioning` (a sandbox being provisioned for the first tool that needs it), in order of appearance.
 * @example
 * startingCapabilitiesOf(message) // ["sandbox"] while the conversation's sandbox starts
 */
export function startingCapabilitiesOf(message: UIMessage): string[] {
  const latest = new Map<string, CapabilityStatusEvent>();
  for (const part of message.parts) {
    const event = capabilityStatusOf(part);
    if (!event) continue;
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
