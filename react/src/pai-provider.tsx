import type { PendingActionAnswer, PublicPendingAction } from "@pai/core";
import { createContext, type ReactNode, useContext, useMemo } from "react";
import { type AnswerActionResult, answerAction } from "./answer-action.ts";
import type { ToolCards } from "./tool-card.ts";

/** One answer to a pending action, as the provider's handlers see it. */
export interface PendingActionAnswerEvent {
  action: PublicPendingAction;
  answer: PendingActionAnswer;
  /**
   * Call it once the server took the answer (before following the continuation), so the card moves from
   * "Approved" to "Running". The provider calls it after `onAnswer` resolves when the handler did not.
   */
  onAccepted?: () => void;
}

/** What `<PaiProvider>` shares with the `<Assistant.Tool>` cards below it. */
export interface PaiContextValue {
  /** Base path of PAI's HTTP handler. */
  api: string;
  /** The thread on screen. */
  threadId: string | undefined;
  /** Custom cards by tool id. */
  cards: ToolCards;
  /** Tool titles by tool id or registration key. */
  titles: Readonly<Record<string, string>>;
  /** Answers a pending action (approve/deny buttons call it). */
  answer: (event: PendingActionAnswerEvent) => Promise<void>;
}

/** What `<PaiProvider>` accepts. */
export interface PaiProviderProps {
  /** Base path of PAI's HTTP handler. @default "/api" */
  api?: string;
  /** The thread on screen (answers use the action's own thread when it names one). */
  threadId?: string;
  /** Custom cards by tool id (`toolMetadata.paiToolId`). */
  cards?: ToolCards;
  /**
   * What cards call each tool, by tool id or registration key (`{ runScript: "Run a script" }`).
   * @default the part's `title`, else words from the registration key ("Run script")
   */
  titles?: Readonly<Record<string, string>>;
  /** Extra request headers for answers (auth). */
  headers?: Record<string, string>;
  /**
   * Answers an action yourself (e.g. `usePaiChat`'s `answer`, which streams the continuation into the chat).
   * @default POST to `{api}/threads/:threadId/actions/:actionId` with {@link answerAction}
   */
  onAnswer?: (event: PendingActionAnswerEvent) => Promise<unknown> | unknown;
  /** Called after the default answer went through, e.g. to reload the thread or call `chat.resumeStream()`. */
  onAnswered?: (event: PendingActionAnswerEvent & { result: AnswerActionResult }) => void;
  children?: ReactNode;
}

const defaultContext: PaiContextValue = {
  api: "/api",
  threadId: undefined,
  cards: {},
  titles: {},
  answer: async ({ action, answer, onAccepted }) => {
    const result = await answerAction({ action, answer });
    if (result.status === "accepted") onAccepted?.();
  },
};

const PaiContext = createContext<PaiContextValue>(defaultContext);

/**
 * Shares the PAI endpoint, the thread, custom tool cards, tool titles and how to answer pending actions with every
 * `<Assistant.Tool>` below it.
 * @example
 * <PaiProvider api="/api" threadId={chat.id} onAnswer={chat.answer} cards={{ runCode: RunCodeCard }}>
 *   <Messages />
 * </PaiProvider>
 */
export function PaiProvider(props: PaiProviderProps): ReactNode {
  const { api = "/api", threadId, cards, titles, headers, onAnswer, onAnswered, children } = props;
  const parent = useContext(PaiContext);
  const value = useMemo<PaiContextValue>(
    () => ({
      api,
      threadId,
      cards: { ...parent.cards, ...cards },
      titles: { ...parent.titles, ...titles },
      answer: async (event) => {
        if (onAnswer) {
          await onAnswer(event);
          event.onAccepted?.();
          return;
        }
        const result = await answerAction({
          api,
          action: event.action,
          answer: event.answer,
          ...(event.action.threadId || threadId ? { threadId: event.action.threadId || threadId } : {}),
          ...(headers ? { headers } : {}),
        });
        if (result.status === "accepted") event.onAccepted?.();
        onAnswered?.({ ...event, result });
      },
    }),
    [api, threadId, cards, titles, headers, onAnswer, onAnswered, parent.cards, parent.titles],
  );
  return <PaiContext.Provider value={value}>{children}</PaiContext.Provider>;
}

/** The nearest `<PaiProvider>`'s value (defaults: `/api`, no cards, plain `answerAction`). */
export function usePaiContext(): PaiContextValue {
  return useContext(PaiContext);
}
