import type { AgentConnection } from "./agent-connection.ts";
import { ContainerAgentError, protocolError } from "./container-agent-error.ts";
import type { Frame } from "./frame-codec.ts";

/** One request of {@link callAgent}. */
export interface AgentCall<T> {
  /** The request's frame type. */
  type: number;
  payload: Uint8Array;
  /** Stops waiting: the call rejects with the signal's reason and a late answer is ignored. */
  signal: AbortSignal | undefined;
  /** Turns the agent's answer into the call's value, or throws. */
  onReply: (frame: Frame) => T;
}

/**
 * Sends one request that the agent answers with one frame, and settles with `onReply(answer)`. `onReply` throwing
 * a `SANDBOX_PROTOCOL` error ends the connection; any other error rejects this request only.
 */
export function callAgent<T>(connection: AgentConnection, call: AgentCall<T>): Promise<T> {
  const { signal } = call;
  if (connection.closed) return Promise.reject(protocolError("the container agent connection is closed"));
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      connection.requests.delete(id);
      reject(signal?.reason);
    };
    const cleanup = () => {
      connection.requests.delete(id);
      signal?.removeEventListener("abort", onAbort);
    };
    const id = connection.requests.add({
      onFrame(frame) {
        let value: T;
        try {
          value = call.onReply(frame);
        } catch (error) {
          if (ContainerAgentError.hasCode(error, "SANDBOX_PROTOCOL")) throw error;
          cleanup();
          reject(error);
          return;
        }
        cleanup();
        resolve(value);
      },
      fail(error) {
        signal?.removeEventListener("abort", onAbort);
        reject(error);
      },
    });
    signal?.addEventListener("abort", onAbort, { once: true });
    connection.send(call.type, id, call.payload);
  });
}
