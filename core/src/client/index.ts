// What a browser UI reads from PAI's messages and sends to PAI: nothing here touches Node (no store, no runtime).
export { type ToolEnd, type ToolEndReason, toolEndOf } from "../actions/tool-end.ts";
export { lastMessageOnly, type SendMessagesRequestOptions } from "./last-message-only.ts";
