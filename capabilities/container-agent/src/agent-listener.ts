import { callAgent } from "./agent-call.ts";
import type { AgentConnection } from "./agent-connection.ts";
import { decodeListeningPayload, encodeListenPayload, FrameType } from "./agent-protocol.ts";
import { agentError, unexpectedFrame } from "./agent-reply-errors.ts";
import { AgentStream, agentStreamLink, deliverStreamFrame } from "./agent-stream.ts";
import { protocolError } from "./container-agent-error.ts";
import type { Frame } from "./frame-codec.ts";

/** Options of `AgentClient.listen`. */
export interface AgentListenOptions {
  /** The container's loopback port to listen on; 0: a port the kernel picks. */
  port: number;
  /** Every connection a program makes there (or, with `hostSocket`, each one the agent could not relay). */
  onConnection: (stream: AgentStream) => void;
  /** A unix socket of this host the container mounts, to which the agent relays each connection. */
  hostSocket?: { path: string; token: string } | undefined;
  /** Stops waiting for the agent's answer. */
  signal?: AbortSignal | undefined;
}

/**
 * The host side of the agent's loopback listener: the connections it accepted, each an {@link AgentStream} here,
 * by id.
 */
export interface AgentListener {
  /** Makes the agent listen; see `AgentClient.listen`. Resolves to the port. */
  listen(options: AgentListenOptions): Promise<number>;
  /** A frame of one of the connections (request ids from `FIRST_STREAM_ID` on). */
  onFrame(frame: Frame): void;
  /** The agent connection ended: every connection is closed. */
  closeAll(): void;
}

/** The listener of `connection`'s agent, not yet listening. */
export function createAgentListener(connection: AgentConnection): AgentListener {
  /** The connections the agent accepted on its listener, by id. */
  const streams = new Map<number, AgentStream>();
  let onConnection: ((stream: AgentStream) => void) | undefined;

  function onFrame(frame: Frame): void {
    const id = frame.requestId;
    if (frame.type === FrameType.StreamOpen) {
      if (streams.has(id)) throw protocolError(`protocol error: connection ${id} opened twice`);
      const stream = new AgentStream(id, agentStreamLink(connection, id));
      streams.set(id, stream);
      if (onConnection) onConnection(stream);
      else stream.destroy();
      return;
    }
    if (deliverStreamFrame(streams.get(id), frame)) streams.delete(id);
  }

  function closeAll(): void {
    const open = [...streams.values()];
    streams.clear();
    for (const stream of open) stream.closedByAgent();
  }

  function listen(options: AgentListenOptions): Promise<number> {
    let payload: Uint8Array;
    try {
      payload = encodeListenPayload(options.port, options.hostSocket);
    } catch (error) {
      return Promise.reject(error);
    }
    return callAgent(connection, {
      type: FrameType.Listen,
      payload,
      signal: options.signal,
      onReply(frame) {
        if (frame.type === FrameType.Listening) {
          // Set while handling LISTENING: no connection can be announced before it.
          onConnection = options.onConnection;
          return decodeListeningPayload(frame.payload);
        }
        if (frame.type === FrameType.Error) {
          throw agentError("SANDBOX_SPAWN_FAILED", frame.payload, { port: options.port });
        }
        return unexpectedFrame(frame, "LISTEN");
      },
    });
  }

  return { listen, onFrame, closeAll };
}
