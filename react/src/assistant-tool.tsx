import type { PendingActionAnswer } from "@pai/core";
import type { UIMessage } from "ai";
import { type ReactNode, useCallback, useMemo, useState } from "react";
import { DefaultToolCard } from "./default-tool-card.tsx";
import { type PaiToolPart, toolIdOf, toolNameOf } from "./is-pai-tool-part.ts";
import { usePaiContext } from "./pai-provider.tsx";
import { pendingActionFor } from "./pending-actions-of.ts";
import { registeredToolCard } from "./register-tool-card.ts";
import type { ToolCard } from "./tool-card.ts";
import { toolDataOf } from "./tool-data-of.ts";

/** What `<Assistant.Tool>` accepts. */
export interface AssistantToolProps<MESSAGE extends UIMessage = UIMessage> {
  /** The message the part belongs to (its `data-*` parts carry the call's tool data and pending actions). */
  message: MESSAGE;
  /** A tool part of `message` (narrow with `isPaiToolPart`). */
  part: PaiToolPart<MESSAGE>;
  /** A card for this one part, over the provider's and the registered ones. */
  card?: ToolCard;
}

/**
 * Renders one tool call: the custom card for its tool id (from `card`, `<PaiProvider cards>` or
 * `registerToolCard`, looked up by `toolMetadata.paiToolId`, then by registration key), else
 * {@link DefaultToolCard}. The card gets the call's streamed tool data and, while it waits for one, the pending
 * action with an `answer` function.
 * @example
 * {isPaiToolPart(part) ? <Assistant.Tool message={message} part={part} /> : null}
 */
export function AssistantTool<MESSAGE extends UIMessage>(props: AssistantToolProps<MESSAGE>): ReactNode {
  const { message, card } = props;
  const part = props.part as PaiToolPart;
  const context = usePaiContext();
  const toolId = toolIdOf(part);
  const toolName = toolNameOf(part);
  const data = useMemo(() => toolDataOf(message, part.toolCallId), [message, part.toolCallId]);
  const waiting = part.state === "input-available" || part.state === "input-streaming";
  const pendingAction = useMemo(
    () => (waiting ? pendingActionFor(message, part.toolCallId) : undefined),
    [waiting, message, part.toolCallId],
  );
  const [answering, setAnswering] = useState(false);
  const [answerError, setAnswerError] = useState<string | undefined>(undefined);
  const answer = useCallback(
    async (value: PendingActionAnswer) => {
      if (!pendingAction) return;
      setAnswering(true);
      setAnswerError(undefined);
      try {
        await context.answer({ action: pendingAction, answer: value });
      } catch (error) {
        setAnswerError(error instanceof Error ? error.message : String(error));
      } finally {
        setAnswering(false);
      }
    },
    [context, pendingAction],
  );
  const Card: ToolCard =
    card ??
    context.cards[toolId] ??
    context.cards[toolName] ??
    registeredToolCard(toolId) ??
    registeredToolCard(toolName) ??
    DefaultToolCard;
  return (
    <Card
      message={message}
      part={part}
      toolId={toolId}
      toolName={toolName}
      data={data}
      pendingAction={pendingAction}
      answer={answer}
      answering={answering}
      answerError={answerError}
    />
  );
}
