// What a browser UI reads from PAI's messages: nothing here touches Node (no store, no runtime).
export { type ToolEnd, type ToolEndReason, toolEndOf } from "../actions/tool-end.ts";
