import type { PendingActionAnswer, RunStatus } from "@pai/core";
import type { UIMessage } from "ai";
import { type ReactNode, useCallback, useMemo, useState } from "react";
import { CodeInterpreterCard } from "./code-interpreter-card.tsx";
import { DefaultToolCard } from "./default-tool-card.tsx";
import { type PaiToolPart, toolIdOf, toolNameOf } from "./is-pai-tool-part.ts";
import { usePaiContext } from "./pai-provider.tsx";
import { pendingActionsOf } from "./pending-actions-of.ts";
import { registeredToolCard } from "./register-tool-card.ts";
import { startingCapabilitiesOf } from "./starting-capabilities-of.ts";
import { type SentAnswer, toolCallStatus } from "./tool-call-status.ts";
import type { ToolCard } from "./tool-card.ts";
import { toolDataOf } from "./tool-data-of.ts";
import { toolTitleOf } from "./tool-title-of.ts";

/** What `<Assistant.Tool>` accepts. */
export interface AssistantToolProps<MESSAGE extends UIMessage = UIMessage> {
  /** The message the part belongs to (its `data-*` parts carry the call's tool data and pending actions). */
  message: MESSAGE;
  /** A tool part of `message` (narrow with `isPaiToolPart`). */
  part: PaiToolPart<MESSAGE>;
  /** A card for this one part, over the provider's and the registered ones. */
  card?: ToolCard;
  /**
   * How the run that wrote `message` ended (its `metadata.runId` in `GET /threads/:id`'s `runs`; `cancelled`
   * right after Stop). A call left without a result by an ended run shows as stopped or failed.
   * @default unknown: open calls show as running
   */
  runStatus?: RunStatus | undefined;
}

/** Cards for PAI's own tools, by their default tool id (any card given or registered wins). */
const BUILT_IN_CARDS: Readonly<Record<string, ToolCard>> = { codeInterpreter: CodeInterpreterCard };

/** The states of a part whose call may wait on a pending action. */
const WAITING: ReadonlySet<string> = new Set([
  "input-streaming",
  "input-available",
  "approval-requested",
  "approval-responded",
]);

/**
 * Renders one tool call: the custom card for its tool id (from `card`, `<PaiProvider cards>` or
 * `registerToolCard`, looked up by `toolMetadata.paiToolId`, then by registration key), else PAI's own card for
 * its tool (`CodeInterpreterCard` for `codeInterpreter`), else {@link DefaultToolCard}. The card gets the call's
 * title and status, its streamed tool data and, while it waits for one, the pending action with an `answer`
 * function. After an answer the status moves on at once
 * (Approved, then Running once the server took it).
 * @example
 * {isPaiToolPart(part) ? <Assistant.Tool message={message} part={part} /> : null}
 */
export function AssistantTool<MESSAGE extends UIMessage>(props: AssistantToolProps<MESSAGE>): ReactNode {
  const { message, card, runStatus } = props;
  const part = props.part as PaiToolPart;
  const context = usePaiContext();
  const toolId = toolIdOf(part);
  const toolName = toolNameOf(part);
  const data = useMemo(() => toolDataOf(message, part.toolCallId), [message, part.toolCallId]);
  const starting = useMemo(() => startingCapabilitiesOf(message), [message]);
  const waiting = WAITING.has(part.state);
  const actions = useMemo(
    () => (waiting ? pendingActionsOf(message, part.toolCallId) : []),
    [waiting, message, part.toolCallId],
  );
  const pendingAction = actions.find((action) => action.status === "pending");
  const settledAction = pendingAction ? undefined : actions.at(-1);
  const [sent, setSent] = useState<(SentAnswer & { actionId: string }) | undefined>(undefined);
  const [answering, setAnswering] = useState(false);
  const [answerError, setAnswerError] = useState<string | undefined>(undefined);
  const answer = useCallback(
    async (value: PendingActionAnswer) => {
      if (!pendingAction) return;
      const { actionId } = pendingAction;
      setAnswering(true);
      setAnswerError(undefined);
      setSent({ actionId, answer: value, accepted: false });
      try {
        await context.answer({
          action: pendingAction,
          answer: value,
          onAccepted: () =>
            setSent((current) => (current?.actionId === actionId ? { ...current, accepted: true } : current)),
        });
      } catch (error) {
        setSent(undefined);
        setAnswerError(error instanceof Error ? error.message : String(error));
      } finally {
        setAnswering(false);
      }
    },
    [context, pendingAction],
  );
  const status = toolCallStatus(part, {
    pendingAction,
    settledAction,
    sent: sent && sent.actionId === pendingAction?.actionId ? sent : undefined,
    runStatus,
    starting,
  });
  const title = part.title ?? context.titles[toolId] ?? context.titles[toolName] ?? toolTitleOf(toolName);
  const Card: ToolCard =
    card ??
    context.cards[toolId] ??
    context.cards[toolName] ??
    registeredToolCard(toolId) ??
    registeredToolCard(toolName) ??
    BUILT_IN_CARDS[toolId] ??
    DefaultToolCard;
  return (
    <Card
      message={message}
      part={part}
      toolId={toolId}
      toolName={toolName}
      title={title}
      status={status}
      data={data}
      pendingAction={pendingAction}
      answer={answer}
      answering={answering}
      answerError={answerError}
    />
  );
}
