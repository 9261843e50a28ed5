import type { UIMessage } from "ai";

/** The text of the thread's last message when it is the assistant's, else `""`: a run's `text`. */
export function lastAssistantText(messages: UIMessage[]): string {
  const last = messages.at(-1);
  if (last?.role !== "assistant") return "";
  return last.parts.map((part) => (part.type === "text" ? part.text : "")).join("");
}
