import type { DynamicToolUIPart, ToolUIPart, UIDataTypes, UIMessage, UIMessagePart, UITools } from "ai";

/** The UI tool parts of a message type: `tool-<registrationKey>` parts typed from its tools, plus `dynamic-tool`. */
export type PaiToolPart<MESSAGE extends UIMessage = UIMessage> =
  | ToolUIPart<MessageTools<MESSAGE>>
  | DynamicToolUIPart;

/** The tool contract (`registration key → { input, output }`) of a UI message type. */
export type MessageTools<MESSAGE extends UIMessage> =
  MESSAGE extends UIMessage<unknown, UIDataTypes, infer TOOLS> ? TOOLS : UITools;

/** The tool parts among a part union (what {@link isPaiToolPart} narrows to). */
export type ToolPartOf<PART> = Extract<PART, { type: `tool-${string}` } | { type: "dynamic-tool" }>;

/**
 * Whether a message part is a tool call: a static `tool-<registrationKey>` part or a `dynamic-tool` part.
 * Narrows `part` to the tool parts of its message type, ready for `<Assistant.Tool message part />`.
 * @example
 * {message.parts.map((part, index) =>
 *   isPaiToolPart(part) ? <Assistant.Tool key={index} message={message} part={part} /> : null,
 * )}
 */
export function isPaiToolPart<PART extends UIMessagePart<UIDataTypes, UITools>>(
  part: PART,
): part is ToolPartOf<PART> {
  return part.type === "dynamic-tool" || (part.type.startsWith("tool-") && "toolCallId" in part);
}

/** The name the agent registered the tool under (the model's name for it). */
export function toolNameOf(part: PaiToolPart<UIMessage>): string {
  return part.type === "dynamic-tool" ? part.toolName : part.type.slice("tool-".length);
}

/**
 * The tool's stable wire id (`toolMetadata.paiToolId`, which PAI records on every tool part), falling back to
 * the registration key for parts that carry none.
 */
export function toolIdOf(part: PaiToolPart<UIMessage>): string {
  const id = part.toolMetadata?.paiToolId;
  return typeof id === "string" ? id : toolNameOf(part);
}
