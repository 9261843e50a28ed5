import type { AgentConnection } from "./agent-connection.ts";
import { decodeErrorPayload, encodeConnectPayload, FrameType } from "./agent-protocol.ts";
import { agentError, unexpectedFrame } from "./agent-reply-errors.ts";
import { AgentStream, agentStreamLink, deliverStreamFrame } from "./agent-stream.ts";
import { protocolError } from "./container-agent-error.ts";

/** ECONNREFUSED on Linux: nothing listens on the port. */
const ECONNREFUSED = 111;

/** Options of `AgentClient.connect`. */
export interface AgentConnectOptions {
  /** Gives up the connection while it is being made: the call rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}

/**
 * `AgentClient.connect` over `connection`: asks the agent to connect to the container's `127.0.0.1:port` and resolves
 * to the connection as an {@link AgentStream}, flow-controlled like the listener's. The CONNECT's request id stays
 * taken until the agent's last frame for it (STREAM_CLOSED, or ERROR), so it is never reused while the agent still
 * knows it. Rejects with `SANDBOX_PORT_CLOSED` when nothing listens there, `SANDBOX_CONNECT_FAILED` when the agent
 * cannot connect for another reason, `INVALID_ARGUMENT` for a port outside 1–65535, `SANDBOX_PROTOCOL` when the
 * agent connection is gone.
 */
export function connectAgentPort(
  connection: AgentConnection,
  port: number,
  options: AgentConnectOptions = {},
): Promise<AgentStream> {
  const { signal } = options;
  let payload: Uint8Array;
  try {
    payload = encodeConnectPayload(port);
  } catch (error) {
    return Promise.reject(error);
  }
  if (connection.closed) return Promise.reject(protocolError("the container agent connection is closed"));
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<AgentStream>((resolve, reject) => {
    let stream: AgentStream | undefined;
    /** Aborted before CONNECTED: the call has rejected, and the frames until the id's last are dropped. */
    let abandoned = false;
    /**
     * From CONNECTED to the next turn of the event loop, while whoever awaits the call has not had the stream yet:
     * an end that comes meanwhile (STREAM_CLOSED in the same read, or the agent connection's end) is held till then,
     * so that its `close` is not emitted before anyone could listen.
     */
    let fresh = false;
    let endedEarly = false;
    const onAbort = () => {
      abandoned = true;
      if (!connection.closed) connection.send(FrameType.StreamClose, id);
      reject(signal?.reason);
    };
    const id = connection.requests.add({
      onFrame(frame) {
        if (stream) {
          if (fresh && frame.type === FrameType.StreamClosed) endedEarly = true;
          else if (deliverStreamFrame(stream, frame)) connection.requests.delete(id);
          return;
        }
        if (frame.type === FrameType.Error || frame.type === FrameType.StreamClosed) {
          connection.requests.delete(id);
          signal?.removeEventListener("abort", onAbort);
          if (abandoned) return;
          if (frame.type === FrameType.StreamClosed) unexpectedFrame(frame, "a connection not yet open");
          reject(
            decodeErrorPayload(frame.payload).errno === ECONNREFUSED
              ? agentError("SANDBOX_PORT_CLOSED", frame.payload, { port })
              : agentError("SANDBOX_CONNECT_FAILED", frame.payload, { port }),
          );
          return;
        }
        if (abandoned) {
          // CONNECTED, or the connection's first frames, before the agent saw STREAM_CLOSE: it ends with STREAM_CLOSED.
          if (frame.type !== FrameType.Connected) deliverStreamFrame(undefined, frame);
          return;
        }
        if (frame.type !== FrameType.Connected) unexpectedFrame(frame, "CONNECT");
        signal?.removeEventListener("abort", onAbort);
        const opened = new AgentStream(id, agentStreamLink(connection, id));
        stream = opened;
        fresh = true;
        setImmediate(() => {
          fresh = false;
          if (!endedEarly) return;
          connection.requests.delete(id);
          opened.closedByAgent();
        });
        resolve(opened);
      },
      fail(error) {
        signal?.removeEventListener("abort", onAbort);
        if (!stream) reject(error);
        else if (fresh) endedEarly = true;
        else stream.closedByAgent();
      },
    });
    signal?.addEventListener("abort", onAbort, { once: true });
    connection.send(FrameType.Connect, id, payload);
  });
}
