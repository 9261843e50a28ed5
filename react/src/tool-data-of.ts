import type { UIMessage } from "ai";

/** One `ctx.data.write` of a tool call, as streamed in a `data-<channel>` part. */
export interface ToolDataItem {
  /** The channel written to (`output` for `ctx.data.write("output", chunk)`). */
  channel: string;
  /** Order of the write on its thread. */
  seq: number;
  /** What was written. */
  value: unknown;
  toolCallId: string;
  toolId: string;
  toolName: string;
}

interface ToolDataPayload {
  toolCallId: string;
  toolId: string;
  toolName: string;
  seq: number;
  value: unknown;
}

const PENDING_ACTION_PART = "data-pai-action";

/**
 * The tool data a call wrote (its `data-*` parts in `message`), in write order.
 * @example
 * const stdout = toolDataOf(message, part.toolCallId).filter((item) => item.channel === "output");
 */
export function toolDataOf(message: UIMessage, toolCallId: string): ToolDataItem[] {
  const items: ToolDataItem[] = [];
  for (const part of message.parts) {
    if (!part.type.startsWith("data-") || part.type === PENDING_ACTION_PART) continue;
    const data = (part as { data?: unknown }).data;
    if (!isToolDataPayload(data) || data.toolCallId !== toolCallId) continue;
    items.push({
      channel: part.type.slice("data-".length),
      seq: data.seq,
      value: data.value,
      toolCallId: data.toolCallId,
      toolId: data.toolId,
      toolName: data.toolName,
    });
  }
  return items.sort((a, b) => a.seq - b.seq);
}

function isToolDataPayload(data: unknown): data is ToolDataPayload {
  if (typeof data !== "object" || data === null) return false;
  const record = data as Record<string, unknown>;
  return typeof record.toolCallId === "string" && typeof record.seq === "number" && "value" in record;
}
