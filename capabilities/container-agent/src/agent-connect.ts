import type { Socket } from "node:net";
import { spliceBytes } from "@pai/core";
import type { AgentConnection } from "./agent-connection.ts";
import { decodeErrorPayload, encodeConnectPayload, FrameType, type HostSocket } from "./agent-protocol.ts";
import { agentError, unexpectedFrame } from "./agent-reply-errors.ts";
import { AgentStream, agentStreamLink, deliverStreamFrame } from "./agent-stream.ts";
import { protocolError } from "./container-agent-error.ts";
import { spliceFrom } from "./splice-socket-bytes.ts";

/** ECONNREFUSED on Linux: nothing listens on the port. */
const ECONNREFUSED = 111;

/**
 * A host unix socket the container mounts, where the agent relays one CONNECT's connection instead of carrying it in
 * frames: `path` and `token` go to the agent, and `accept` is the connection as that socket receives it.
 */
export interface AgentDialBack extends HostSocket {
  /**
   * The connection the agent made to the socket with `token`, its first line (`PAI-AGENT/1 <token>`) consumed.
   * Rejects when none comes in time, and with the signal's reason on abort; the token is spent either way.
   */
  accept(options: { signal: AbortSignal }): Promise<Socket>;
}

/** Options of `AgentClient.connect`. */
export interface AgentConnectOptions {
  /** Gives up the connection while it is being made: the call rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /**
   * Relay the connection through this host socket (see `AgentDial.dialBack`) instead of in frames: the call then
   * resolves to that socket's end of it, and none of its bytes cross the agent's frame stream.
   */
  hostSocket?: AgentDialBack | undefined;
}

/** The error of the agent's ERROR for a CONNECT to `port`. */
function connectError(payload: Uint8Array, port: number) {
  return decodeErrorPayload(payload).errno === ECONNREFUSED
    ? agentError("SANDBOX_PORT_CLOSED", payload, { port })
    : agentError("SANDBOX_CONNECT_FAILED", payload, { port });
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
          reject(connectError(frame.payload, port));
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

/**
 * `AgentClient.connect` with a host socket: the agent connects to the container's `127.0.0.1:port`, then to
 * `hostSocket` (saying its token), relays the two and answers CONNECTED, its last frame for the id. Resolves to the
 * socket `hostSocket.accept` hands over once both came; on any failure the token is spent and that socket, if it
 * came, destroyed. A STREAM_CLOSE on abort makes the agent drop a connect still under way (STREAM_CLOSED); the id
 * stays taken until the agent's last frame for it. Rejects as {@link connectAgentPort} does.
 */
export async function connectAgentPortDialBack(
  connection: AgentConnection,
  port: number,
  options: AgentConnectOptions & { hostSocket: AgentDialBack },
): Promise<Socket> {
  const { signal, hostSocket } = options;
  const giveUp = new AbortController();
  const onAbort = () => giveUp.abort(signal?.reason);
  if (signal?.aborted) onAbort();
  else signal?.addEventListener("abort", onAbort, { once: true });
  // Waiting for the socket from the start spends the token whatever happens next.
  const accepted = hostSocket.accept({ signal: giveUp.signal });
  try {
    const [socket] = await Promise.all([
      accepted,
      requestDialBack(connection, port, hostSocket, giveUp.signal),
    ]);
    // As the frame path's connection: the container's server ending its side leaves this side writable, and the
    // bytes wait for a reader ("data" listener or pipe) instead of staying paused as the dial socket left them.
    socket.allowHalfOpen = true;
    (socket as { readableFlowing: boolean | null }).readableFlowing = null;
    // Its bytes may also be moved to another socket in the kernel (a preview's large response body).
    Object.defineProperty(socket, spliceBytes, { value: spliceFrom(socket) });
    return socket;
  } catch (error) {
    giveUp.abort(error);
    accepted.then(
      (socket) => socket.destroy(),
      () => {},
    );
    throw error;
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
}

/** Sends the dial-back CONNECT; resolves on CONNECTED, rejects on ERROR or when `signal` aborts first. */
function requestDialBack(
  connection: AgentConnection,
  port: number,
  hostSocket: HostSocket,
  signal: AbortSignal,
): Promise<void> {
  let payload: Uint8Array;
  try {
    payload = encodeConnectPayload(port, hostSocket);
  } catch (error) {
    return Promise.reject(error);
  }
  if (connection.closed) return Promise.reject(protocolError("the container agent connection is closed"));
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      if (!connection.closed) connection.send(FrameType.StreamClose, id);
      reject(signal.reason);
    };
    const id = connection.requests.add({
      onFrame(frame) {
        if (frame.type !== FrameType.Connected && frame.type !== FrameType.Error) {
          if (signal.aborted && frame.type === FrameType.StreamClosed)
            return void connection.requests.delete(id);
          unexpectedFrame(frame, "a dial-back CONNECT");
        }
        connection.requests.delete(id);
        signal.removeEventListener("abort", onAbort);
        if (frame.type === FrameType.Connected) resolve();
        else reject(connectError(frame.payload, port));
      },
      fail(error) {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    });
    signal.addEventListener("abort", onAbort, { once: true });
    connection.send(FrameType.Connect, id, payload);
  });
}
