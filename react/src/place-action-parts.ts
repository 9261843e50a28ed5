import type { UIMessage } from "ai";

type Part = UIMessage["parts"][number] & { id?: string; data?: unknown; toolCallId?: unknown };

/**
 * The conversation with every pending action's `data-pai-action` part beside the call it belongs to. A run that
 * a new message starts cancels the actions still waiting and streams their new state in its own (new) message,
 * while their calls sit in an earlier one; the stored thread keeps each action beside its call, and this puts a
 * live chat's messages the same way, so the earlier card shows its action settled. Returns `messages` itself
 * when nothing moves.
 * @example
 * const messages = useMemo(() => placeActionParts(chat.messages), [chat.messages]);
 */
export function placeActionParts<MESSAGE extends UIMessage>(messages: readonly MESSAGE[]): MESSAGE[] {
  const holder = new Map<string, number>();
  messages.forEach((message, index) => {
    for (const part of message.parts as Part[]) {
      if (part.type.startsWith("tool-") && typeof part.toolCallId === "string")
        holder.set(part.toolCallId, index);
    }
  });
  let next: MESSAGE[] | undefined;
  messages.forEach((message, index) => {
    for (const part of message.parts as Part[]) {
      if (part.type !== "data-pai-action") continue;
      const toolCallId = (part.data as { toolCallId?: unknown } | undefined)?.toolCallId;
      const target = typeof toolCallId === "string" ? holder.get(toolCallId) : undefined;
      if (target === undefined || target === index) continue;
      next ??= [...messages];
      next[index] = withoutPart(next[index]!, part);
      next[target] = withPart(next[target]!, part);
    }
  });
  return next ?? (messages as MESSAGE[]);
}

function withoutPart<MESSAGE extends UIMessage>(message: MESSAGE, part: Part): MESSAGE {
  return { ...message, parts: message.parts.filter((candidate) => candidate !== part) };
}

/** `message` with `part` in place of its part of the same type and id, or appended. */
function withPart<MESSAGE extends UIMessage>(message: MESSAGE, part: Part): MESSAGE {
  const parts = [...(message.parts as Part[])];
  const index = parts.findIndex((candidate) => candidate.type === part.type && candidate.id === part.id);
  if (index >= 0) parts[index] = part;
  else parts.push(part);
  return { ...message, parts: parts as MESSAGE["parts"] };
}
