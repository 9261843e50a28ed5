export type { EgressAllowEntry, EgressNetworkOptions } from "@pai/container-agent";
export type { ImageProgress, ImageRecipe } from "@pai/pool";
export {
  type AgentExecutor,
  type AgentExecutorOptions,
  createAgentExecutor,
} from "./agent-executor.ts";
export { bindSandboxFacade } from "./bind-sandbox-facade.ts";
export {
  type CodeContext,
  type CodeContextCallOptions,
  type CodeError,
  type CodeInterpreter,
  type CodeInterpreterModelOutputOptions,
  type CodeInterpreterOutput,
  type CodeInterpreterToolOptions,
  type CodeLanguage,
  type CodeResult,
  type CodeTerminationReason,
  type CreateCodeContextOptions,
  codeInterpreterModelOutput,
  codeInterpreterOutputSchema,
  codeResultSchema,
  defineCodeInterpreterTool,
  type RunCodeOptions,
  type RunCodeResult,
} from "./code-interpreter/index.ts";
export type {
  CommandExecutor,
  ExecutorProcess,
  ExecutorProcessResult,
  ExecutorSpawnOptions,
} from "./command-executor.ts";
export { createSandboxFacade, type SandboxFacadeOptions } from "./create-sandbox-facade.ts";
export {
  createDockerExecExecutor,
  DEFAULT_MAX_OUTPUT_BYTES,
  type DockerExecExecutorOptions,
} from "./docker-exec-executor.ts";
export {
  type DockerSandboxBinding,
  type DockerSandboxOptions,
  dockerSandbox,
  type ProvisionedSandbox,
  type SandboxCodeInterpreterOptions,
  type SandboxConnectionEvent,
} from "./docker-sandbox.ts";
export { sandbox } from "./sandbox.ts";
export { SandboxError, type SandboxErrorCode } from "./sandbox-error.ts";
export type {
  CommandResult,
  OpenTerminalOptions,
  ReadFileOptions,
  RunCommandOptions,
  SandboxExposePortOptions,
  SandboxFacade,
  SandboxFileEntry,
  SandboxFileOptions,
  SandboxFileStat,
  SandboxFileType,
  SandboxInfo,
  SandboxProcess,
  SandboxSignal,
  SpawnCommandOptions,
  TerminalDimensions,
  TerminalSession,
  TerminationReason,
  UploadResult,
  WriteFileEntry,
} from "./sandbox-facade.ts";
export {
  LATEST_SANDBOX_IMAGE,
  provideSandboxImage,
  resolveDefaultSandboxImage,
  sandboxImage,
} from "./sandbox-image.ts";
export { type ToSandboxSessionOptions, toSandboxSession } from "./to-sandbox-session.ts";
export { resolveWorkspacePath } from "./workspace-path.ts";
