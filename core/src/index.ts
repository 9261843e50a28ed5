export type { LanguageModel, UIMessage } from "ai";
export { type PendingActionAnswer, pendingActionAnswerSchema } from "./actions/pending-action-answer.ts";
export type { PublicPendingAction } from "./actions/public-action.ts";
export { type ToolEnd, type ToolEndReason, toolEndOf } from "./actions/tool-end.ts";
export {
  createPai,
  type InferAgentTools,
  type InferAgentUIMessage,
  type InferPaiContract,
  type InferToolPath,
  type Pai,
  type PaiMessageMetadata,
  type RegisteredAgent,
} from "./agents/create-pai.ts";
export {
  type AgentDefinition,
  type AgentLifecycle,
  type AgentOptions,
  type AgentResolverArgs,
  type AgentToolRegistrations,
  type AnyAgentDefinition,
  defineAgent,
  type RunScope,
  type RuntimeContextArgs,
  type RuntimeErrorInfo,
  type ToolOutputEvent,
  type ToolRegistrationConfig,
  type ToolResultEvent,
  type ToolResultOverride,
} from "./agents/define-agent.ts";
export {
  defineToolSource,
  isToolSource,
  type ToolSource,
  type ToolSourceArgs,
} from "./agents/tool-source.ts";
export type {
  BindingStartContext,
  CapabilityBinding,
  CapabilityConnectionEvent,
  ProvisionedResource,
  ProvisionRequest,
  ReapContext,
  ResourceAcquisition,
  ResourceHibernation,
  ResourceRestart,
} from "./capabilities/capability-binding.ts";
export type { CapabilityStatusEvent } from "./capabilities/capability-status-event.ts";
export {
  type Capability,
  type CapabilityFacades,
  type CapabilityMap,
  type CapabilityOptions,
  defineCapability,
  type FacadeMembers,
  type FacadeOf,
} from "./capabilities/define-capability.ts";
export type {
  CheckpointBlobStore,
  ManifestEntry,
  ResourceCheckpoints,
  RestoredCheckpoint,
  StoppedProcess,
  StoredBlob,
  TakenCheckpoint,
  WorkspaceManifest,
} from "./checkpoints/checkpoint-blob-store.ts";
export {
  createFileCheckpointStore,
  type FileCheckpointStoreOptions,
} from "./checkpoints/file-checkpoint-store.ts";
export type {
  ForkResult,
  ForkThreadOptions,
  RestoredResource,
  RewindResult,
  RewindThreadOptions,
} from "./checkpoints/rewind-thread.ts";
export {
  loadWorkspaceManifest,
  type StoredWorkspaceManifest,
  storeWorkspaceManifest,
  workspaceManifestBlobs,
} from "./checkpoints/stored-workspace-manifest.ts";
export type { CheckpointOptions } from "./checkpoints/thread-checkpoints.ts";
export { checkManifestEntries, maxManifestEntries } from "./checkpoints/workspace-manifest.ts";
export { PaiError, type PaiErrorCode } from "./errors/pai-error.ts";
export { createPaiHandler, type PaiHandler, type PaiHandlerOptions } from "./http/create-pai-handler.ts";
export {
  createPreviewServer,
  type PreviewServer,
  type PreviewServerOptions,
} from "./http/create-preview-server.ts";
export { type NodeListener, toNodeListener } from "./http/node-listener.ts";
export type { TerminalSessionLike } from "./http/terminal-socket.ts";
export type { UpgradeListener } from "./http/upgrade-handler.ts";
export type { AgentManifest, PaiManifest, ToolManifest, ToolSourceManifest } from "./manifest/manifest.ts";
export type {
  ExposePortOptions,
  PortPreview,
  PreviewAccess,
  PreviewExposer,
} from "./previews/port-preview.ts";
export type { PreviewOptions } from "./previews/preview-options.ts";
export type { PreviewRequestEvent } from "./previews/preview-request-event.ts";
export { type SpliceBytes, spliceBytes } from "./previews/splice-bytes.ts";
export type { AgentRun, RunResult } from "./runtime/agent-run.ts";
export {
  type AgentRuntime,
  type AgentRuntimeOptions,
  createAgentRuntime,
  type OwnershipOptions,
  type RuntimeCloseOptions,
} from "./runtime/create-agent-runtime.ts";
export type { MessageLimits } from "./runtime/message-limits.ts";
export type { RequiredCapabilities } from "./runtime/required-capabilities.ts";
export type { RespondOptions, RespondResult } from "./runtime/respond-to-action.ts";
export type { RunOptions } from "./runtime/start-user-run.ts";
export type { StopResult } from "./runtime/stop-anywhere.ts";
export type { ThreadAccess } from "./runtime/thread-access.ts";
export type { ThreadSnapshot } from "./runtime/thread-reads.ts";
export {
  type ObservedPoolState,
  observePool,
  type PaiMetrics,
  paiMetrics,
} from "./telemetry/pai-metrics.ts";
export {
  activeTelemetryFlags,
  inPaiSpan,
  type PaiSpanOptions,
  type PaiTelemetryFlags,
  paiTracer,
  type TelemetrySettings,
} from "./telemetry/pai-telemetry.ts";
export * from "./threads/index.ts";
export {
  type AnyToolDefinition,
  type ChildrenOf,
  type ContextOf,
  defineTool,
  type InputOf,
  isToolDefinition,
  type OutputOf,
  type ToModelOutputOptions,
  type ToolDefinition,
  type ToolOptions,
} from "./tools/define-tool.ts";
export type {
  ThreadFile,
  ToolAgents,
  ToolCallLocation,
  ToolDataAccess,
  ToolDataChannels,
  ToolDataEntry,
  ToolEntry,
  ToolExecuteContext,
  ToolFailOptions,
  ToolFiles,
  ToolSuspendOptions,
} from "./tools/tool-context.ts";
export {
  type InferToolInput,
  type ToolInputSchema,
  toolInputJsonSchema,
} from "./tools/tool-input-schema.ts";
export { isToolSuspension } from "./tools/tool-signals.ts";
