import { callAgent } from "./agent-call.ts";
import type { AgentConnection } from "./agent-connection.ts";
import { FrameType } from "./agent-protocol.ts";
import { unexpectedFrame } from "./agent-reply-errors.ts";
import { protocolError } from "./container-agent-error.ts";

/**
 * `AgentClient.ping` for `connection`: each PING carries the next number of a counter, which the PONG must echo.
 * Resolves to the round trip in milliseconds.
 */
export function createAgentPing(
  connection: AgentConnection,
): (options?: { signal?: AbortSignal | undefined }) => Promise<number> {
  let counter = 0;
  return (options = {}) => {
    const payload = new Uint8Array(8);
    new DataView(payload.buffer).setFloat64(0, ++counter);
    const started = performance.now();
    return callAgent(connection, {
      type: FrameType.Ping,
      payload,
      signal: options.signal,
      onReply(frame) {
        if (frame.type !== FrameType.Pong) unexpectedFrame(frame, "PING");
        if (frame.payload.length !== 8 || !frame.payload.every((byte, index) => byte === payload[index])) {
          throw protocolError("protocol error: PONG does not echo the PING");
        }
        return performance.now() - started;
      },
    });
  };
}
