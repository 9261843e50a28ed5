import type { PendingActionAnswer, PublicPendingAction } from "@pai/core";
import type { UIMessage } from "ai";
import type { ComponentType } from "react";
import type { MessageTools, PaiToolPart } from "./is-pai-tool-part.ts";
import type { ToolCallStatus } from "./tool-call-status.ts";
import type { ToolDataItem } from "./tool-data-of.ts";

/**
 * A pending action as a card gets it: `path` (where in the call the wait is) typed from the tool's nested tools
 * when the message type comes from `InferAgentUIMessage` (e.g. `["code"] | ["code", "approve"]`).
 */
export type PaiPendingAction<PART = PaiToolPart, MESSAGE extends UIMessage = UIMessage> = Omit<
  PublicPendingAction,
  "path"
> & { path: PathOf<PART, MESSAGE> };

type PathOf<PART, MESSAGE extends UIMessage> = PART extends { type: `tool-${infer NAME}` }
  ? NAME extends keyof MessageTools<MESSAGE>
    ? MessageTools<MESSAGE>[NAME] extends { path: infer PATH extends string[] }
      ? PATH
      : string[]
    : string[]
  : string[];

/** What a tool card is rendered with. */
export interface ToolCardProps<
  PART extends PaiToolPart = PaiToolPart,
  MESSAGE extends UIMessage = UIMessage,
> {
  /** The message the part belongs to. */
  message: MESSAGE;
  /** The tool part (input, state, output or error). */
  part: PART;
  /** The tool's stable wire id (`toolMetadata.paiToolId`, else the registration key). */
  toolId: string;
  /** The registration key (the model's name for the tool). */
  toolName: string;
  /** What to call the tool: the part's `title`, else `<PaiProvider titles>`, else made from the registration key. */
  title: string;
  /** Where the call stands (`toolCallStatus`): what the badge shows, with the reason of a failure or denial. */
  status: ToolCallStatus;
  /** What the call streamed with `ctx.data.write`, in write order. */
  data: ToolDataItem[];
  /**
   * The action the call waits on (approval, client tool), while it is pending. Its `path` says where: `[toolName]`
   * for the call itself, longer for a nested tool, a code-mode program's call or a subagent's tool.
   */
  pendingAction: PaiPendingAction<PART, MESSAGE> | undefined;
  /** Answers {@link ToolCardProps.pendingAction} through the nearest `<PaiProvider>`. */
  answer: (answer: PendingActionAnswer) => Promise<void>;
  /** An answer is in flight. */
  answering: boolean;
  /** Why the last answer failed. */
  answerError: string | undefined;
}

/** A component that renders one tool's calls. */
export type ToolCard<PART extends PaiToolPart = any, MESSAGE extends UIMessage = any> = ComponentType<
  ToolCardProps<PART, MESSAGE>
>;

/** Custom cards by tool id (`toolMetadata.paiToolId`; the registration key works for parts without one). */
export type ToolCards = Readonly<Record<string, ToolCard>>;

/**
 * The props of a card for one tool of a message type, its part narrowed by registration key.
 * @example
 * function RunCodeCard({ part }: ToolCardPropsFor<ChatMessage, "runCode">) {
 *   return part.state === "output-available" ? <pre>{part.output.stdout}</pre> : null;
 * }
 */
export type ToolCardPropsFor<
  MESSAGE extends UIMessage,
  NAME extends keyof MessageTools<MESSAGE> & string,
> = ToolCardProps<Extract<PaiToolPart<MESSAGE>, { type: `tool-${NAME}` }>, MESSAGE>;
