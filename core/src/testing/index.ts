export {
  createScriptedModel,
  type ScriptedModel,
  type ScriptedStep,
  type ScriptedStepSource,
  type ScriptedToolCall,
  scriptedStepParts,
} from "./scripted-model.ts";
