export { type AnswerActionOptions, type AnswerActionResult, answerAction } from "./answer-action.ts";
export { Assistant } from "./assistant.ts";
export { AssistantTool, type AssistantToolProps } from "./assistant-tool.tsx";
export { capabilityStatusOf } from "./capability-status-of.ts";
export { CodeInterpreterCard } from "./code-interpreter-card.tsx";
export { DefaultToolCard } from "./default-tool-card.tsx";
export { type FollowRunStreamOptions, followRunStream, upsertMessage } from "./follow-run-stream.ts";
export {
  isPaiToolPart,
  type MessageTools,
  type PaiToolPart,
  type ToolPartOf,
  toolIdOf,
  toolNameOf,
} from "./is-pai-tool-part.ts";
export {
  type PaiContextValue,
  PaiProvider,
  type PaiProviderProps,
  type PendingActionAnswerEvent,
  usePaiContext,
} from "./pai-provider.tsx";
export { PaiResponseError } from "./pai-response-error.ts";
export { pendingActionFor, pendingActionsOf } from "./pending-actions-of.ts";
export { placeActionParts } from "./place-action-parts.ts";
export { registeredToolCard, registerToolCard } from "./register-tool-card.ts";
export { sanitizeHtml } from "./sanitize-html.ts";
export { startingCapabilitiesOf } from "./starting-capabilities-of.ts";
export { type ToolCallEnd, toolCallEnd } from "./tool-call-end.ts";
export {
  type SentAnswer,
  type ToolCallStatus,
  type ToolCallStatusOptions,
  toolCallStatus,
} from "./tool-call-status.ts";
export type { PaiPendingAction, ToolCard, ToolCardProps, ToolCardPropsFor, ToolCards } from "./tool-card.ts";
export { ToolCardFrame, type ToolCardFrameProps } from "./tool-card-frame.tsx";
export { type ToolDataItem, toolDataOf } from "./tool-data-of.ts";
export { toolTitleOf } from "./tool-title-of.ts";
export { type UsePaiChatHelpers, type UsePaiChatOptions, usePaiChat } from "./use-pai-chat.ts";
export { usePendingActions } from "./use-pending-actions.ts";
export { wokenNoteOf } from "./woken-note-of.ts";
