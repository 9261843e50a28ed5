export { type AgentClient, type AgentClientOptions, createAgentClient } from "./agent-client.ts";
export type { AgentConnectOptions, AgentDialBack } from "./agent-connect.ts";
export type { AgentTransport } from "./agent-connection.ts";
export { type AgentDialSocket, createAgentDialSocket } from "./agent-dial-socket.ts";
export type { AgentReadFileOptions, AgentWriteFileOptions } from "./agent-files.ts";
export type { AgentListenOptions } from "./agent-listener.ts";
export {
  type AgentProcess,
  type AgentProcessResult,
  type AgentSpawnOptions,
  DEFAULT_MAX_OUTPUT_BYTES,
  type TerminationReason,
} from "./agent-process.ts";
export {
  AGENT_FRAME_TYPES,
  AGENT_PROTOCOL_VERSION,
  type AgentHello,
  type AgentSignal,
  FIRST_STREAM_ID,
  FRAME_HEADER_BYTES,
  FrameType,
  HOST_FRAME_TYPES,
  type HostSocket,
  LINUX_SIGNALS,
  MAX_FRAME_PAYLOAD_BYTES,
  maxWriteFileBytes,
  signalName,
  signalNumber,
  type TerminalSize,
} from "./agent-protocol.ts";
export { AgentStream, STREAM_WINDOW_BYTES } from "./agent-stream.ts";
export { agentSupervisorSpec, SANDBOX_USER } from "./agent-supervisor-spec.ts";
export {
  AGENT_DIRECTORY,
  AGENT_PATH,
  type AgentVolumeMount,
  agentVolumeMount,
  prepareAgentVolume,
} from "./agent-volume.ts";
export {
  type ConnectContainerAgentOptions,
  type ContainerAgentConnection,
  connectContainerAgent,
} from "./connect-container-agent.ts";
export { ContainerAgentError, type ContainerAgentErrorCode } from "./container-agent-error.ts";
export {
  canonicalAddress,
  type RestrictedAddressClass,
  restrictedAddressClass,
} from "./egress/address-class.ts";
export {
  type ConnectionAudience,
  type ConnectionReporter,
  createConnectionAudience,
} from "./egress/connection-audience.ts";
export { type EgressChannel, prepareEgressChannel, wantsEgressChannel } from "./egress/egress-channel.ts";
export type { EgressNetworkOptions } from "./egress/egress-network-options.ts";
export {
  type EgressAllowEntry,
  type EgressDecision,
  type EgressPolicy,
  type EgressTarget,
  formatTarget,
  parseEgressPolicy,
} from "./egress/egress-policy.ts";
export {
  createEgressProxy,
  type EgressChannelKind,
  type EgressConnectionEvent,
  type EgressHandleOptions,
  type EgressProxy,
  type EgressProxyOptions,
  MAX_REQUEST_HEAD_BYTES,
  type ProxiedConnection,
  type ProxiedConnectionEvents,
  type UpstreamRequest,
} from "./egress/egress-proxy.ts";
export {
  createEgressRelay,
  type EgressAdmission,
  type EgressRelay,
  type EgressRelayOptions,
} from "./egress/egress-relay.ts";
export { proxiedDuplex } from "./egress/proxied-duplex.ts";
export { EGRESS_PROXY_PORT, egressEnvironment, serveEgress } from "./egress/serve-egress.ts";
export {
  createFrameDecoder,
  encodeFrame,
  type Frame,
  type FrameDecoder,
  type FrameDecoderOptions,
} from "./frame-codec.ts";
export {
  EGRESS_SOCKET_DIRECTORY,
  egressSocketHostDirectory,
  engineSharesHostSocketDirectory,
} from "./host-socket-directory.ts";
export { type LoopbackConnector, openLoopbackConnector } from "./loopback-connector.ts";
export { createOutputCollector, type OutputCollector } from "./output-collector.ts";
export {
  findPrebuiltBinary,
  nodeArchitecture,
  PREBUILT_ARCHITECTURES,
  type PrebuiltArchitecture,
  type PrebuiltProgram,
  prebuiltBinaryPath,
} from "./prebuilt-binary.ts";
export { type AgentDial, prepareAgentDial } from "./prepare-agent-dial.ts";
export type { RestartBackoffOptions } from "./restart-schedule.ts";
