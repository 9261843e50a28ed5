export { agentBinaryPath, agentBuildScriptPath, buildAgentBinary } from "./agent-binary.ts";
export {
  type AgentClient,
  type AgentClientOptions,
  type AgentProcess,
  type AgentProcessResult,
  type AgentReadFileOptions,
  type AgentSpawnOptions,
  type AgentTransport,
  type AgentWriteFileOptions,
  createAgentClient,
  DEFAULT_MAX_OUTPUT_BYTES,
  type TerminationReason,
} from "./agent-client.ts";
export {
  AGENT_FRAME_TYPES,
  AGENT_PROTOCOL_VERSION,
  type AgentHello,
  type AgentSignal,
  FRAME_HEADER_BYTES,
  FrameType,
  HOST_FRAME_TYPES,
  LINUX_SIGNALS,
  MAX_FRAME_PAYLOAD_BYTES,
  maxWriteFileBytes,
  signalName,
  signalNumber,
} from "./agent-protocol.ts";
export {
  createFrameDecoder,
  encodeFrame,
  type Frame,
  type FrameDecoder,
  type FrameDecoderOptions,
} from "./frame-codec.ts";
export { createOutputCollector, type OutputCollector } from "./output-collector.ts";
export { SandboxAgentError, type SandboxAgentErrorCode } from "./sandbox-agent-error.ts";
