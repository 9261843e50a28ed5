import { decodeErrorPayload, errnoName } from "./agent-protocol.ts";
import { ContainerAgentError, protocolError } from "./container-agent-error.ts";
import type { Frame } from "./frame-codec.ts";

/** The error an ERROR frame of the agent reports (its errno and message), with `details` about the request. */
export function agentError(
  code: "SANDBOX_SPAWN_FAILED" | "SANDBOX_FILE_FAILED" | "SANDBOX_PORT_CLOSED" | "SANDBOX_CONNECT_FAILED",
  payload: Uint8Array,
  details: object,
): ContainerAgentError {
  const { errno, message } = decodeErrorPayload(payload);
  return new ContainerAgentError(code, message, {
    details: { ...details, errno, errnoName: errnoName(errno) },
  });
}

/** Throws the `SANDBOX_PROTOCOL` error for a frame that does not answer `what`: it ends the connection. */
export function unexpectedFrame(frame: Frame, what: string): never {
  throw protocolError(`protocol error: unexpected frame type 0x${frame.type.toString(16)} for ${what}`);
}
