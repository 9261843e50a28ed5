import type { CapabilityStatusEvent } from "@pai/core";

/** The capability status a message part carries (`data-pai-capability`), or `undefined` for any other part. */
export function capabilityStatusOf(part: {
  type: string;
  data?: unknown;
}): CapabilityStatusEvent | undefined {
  if (part.type !== "data-pai-capability") return undefined;
  const value = part.data;
  if (typeof value !== "object" || value === null) return undefined;
  const record = value as Record<string, unknown>;
  return typeof record.capability === "string" && typeof record.status === "string"
    ? (value as CapabilityStatusEvent)
    : undefined;
}
