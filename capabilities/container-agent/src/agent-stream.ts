import { Duplex } from "node:stream";
import type { AgentConnection } from "./agent-connection.ts";
import { decodeU32Payload, FrameType } from "./agent-protocol.ts";
import { unexpectedFrame } from "./agent-reply-errors.ts";
import type { Frame } from "./frame-codec.ts";

/** Unacknowledged bytes each way per connection (the agent's own window matches it). */
export const STREAM_WINDOW_BYTES = 4 * 1024 * 1024;
/** The largest STREAM_DATA payload the host sends. */
const MAX_CHUNK_BYTES = 1024 * 1024;

/** What a connection needs from the agent client: sending its frames. */
export interface AgentStreamLink {
  /** Sends one frame for this connection; `payload` is handed on without a copy. */
  send(type: number, payload?: Uint8Array): void;
  /** False once the agent connection is gone. */
  readonly open: boolean;
}

/** The link of connection `id` over the agent connection `connection`. */
export function agentStreamLink(connection: AgentConnection, id: number): AgentStreamLink {
  return {
    send: (type, payload) => connection.send(type, id, payload),
    get open() {
      return !connection.closed;
    },
  };
}

/**
 * One TCP connection relayed by the agent, as a Node `Duplex` on the host: one a program in the container made to
 * the agent's loopback listener, or one the host made to a port in the container (`AgentClient.connect`). What the
 * program sends is readable here, what is written here reaches the program. Both directions
 * are flow-controlled over the agent connection by acknowledgements ({@link STREAM_WINDOW_BYTES} in flight),
 * so neither side buffers without bound. `end()` half-closes the program's side; `destroy()` closes the
 * connection.
 */
export class AgentStream extends Duplex {
  /** The agent's id of this connection. */
  readonly id: number;
  readonly #link: AgentStreamLink;
  /** Bytes sent to the agent and not yet acknowledged. */
  #unacked = 0;
  /** Bytes received and not yet acknowledged (held while the reader is not reading). */
  #toAck = 0;
  #waitingForWindow: (() => void) | undefined;
  #closedByAgent = false;
  #ended = false;

  constructor(id: number, link: AgentStreamLink) {
    super({ allowHalfOpen: true, readableHighWaterMark: 1024 * 1024, writableHighWaterMark: 1024 * 1024 });
    this.id = id;
    this.#link = link;
  }

  /** Bytes from the program (STREAM_DATA from the agent). */
  receive(payload: Uint8Array): void {
    if (this.destroyed) return;
    this.#toAck += payload.length;
    if (this.push(payload)) this.#ack();
  }

  /** The program shut down its write side (STREAM_EOF from the agent). */
  receiveEnd(): void {
    this.#ended = true;
    if (!this.destroyed) this.push(null);
  }

  /** The agent acknowledged `count` bytes written to the program. */
  acknowledged(count: number): void {
    this.#unacked = Math.max(0, this.#unacked - count);
    if (this.#unacked < STREAM_WINDOW_BYTES) {
      const resume = this.#waitingForWindow;
      this.#waitingForWindow = undefined;
      resume?.();
    }
  }

  /** The connection is gone on the agent's side (STREAM_CLOSED, or the agent connection ended). */
  closedByAgent(error?: Error): void {
    this.#closedByAgent = true;
    const resume = this.#waitingForWindow;
    this.#waitingForWindow = undefined;
    resume?.();
    if (this.destroyed) return;
    if (error) this.destroy(error);
    // Both directions ended in order: what is still buffered for the reader is delivered, then it closes.
    else if (!(this.#ended && this.writableFinished)) this.destroy(); // reset: the program went away
  }

  #ack(): void {
    if (this.#toAck === 0 || this.#closedByAgent || !this.#link.open) return;
    const view = new Uint8Array(4);
    new DataView(view.buffer).setUint32(0, this.#toAck);
    this.#toAck = 0;
    this.#link.send(FrameType.StreamAck, view);
  }

  override _read(): void {
    this.#ack();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.#send(chunk, callback);
  }

  override _writev(
    chunks: Array<{ chunk: Buffer; encoding: BufferEncoding }>,
    callback: (error?: Error | null) => void,
  ): void {
    this.#send(
      chunks.length === 1 ? chunks[0]!.chunk : Buffer.concat(chunks.map((entry) => entry.chunk)),
      callback,
    );
  }

  #send(data: Buffer, callback: (error?: Error | null) => void): void {
    if (this.#closedByAgent || !this.#link.open) {
      callback(Object.assign(new Error("the connection is closed"), { code: "ECONNRESET" }));
      return;
    }
    for (let offset = 0; offset < data.length; offset += MAX_CHUNK_BYTES) {
      const part = data.subarray(offset, Math.min(data.length, offset + MAX_CHUNK_BYTES));
      this.#link.send(FrameType.StreamData, part);
      this.#unacked += part.length;
    }
    if (this.#unacked < STREAM_WINDOW_BYTES) callback();
    else this.#waitingForWindow = () => callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (!this.#closedByAgent && this.#link.open) this.#link.send(FrameType.StreamEof);
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.#closedByAgent && this.#link.open) this.#link.send(FrameType.StreamClose);
    this.#closedByAgent = true;
    const resume = this.#waitingForWindow;
    this.#waitingForWindow = undefined;
    resume?.();
    callback(error);
  }
}

/**
 * Hands a frame the agent sent about a connection to its stream (`undefined`: the host has forgotten it, and the
 * frame is dropped). True when it was the connection's last frame (STREAM_CLOSED): its owner forgets it. A frame a
 * connection cannot get throws `SANDBOX_PROTOCOL`.
 */
export function deliverStreamFrame(stream: AgentStream | undefined, frame: Frame): boolean {
  switch (frame.type) {
    case FrameType.StreamDataOut:
      stream?.receive(frame.payload);
      return false;
    case FrameType.StreamEofOut:
      stream?.receiveEnd();
      return false;
    case FrameType.StreamAckOut:
      stream?.acknowledged(decodeU32Payload(frame.payload, "STREAM_ACK"));
      return false;
    case FrameType.StreamClosed:
      stream?.closedByAgent();
      return true;
    default:
      return unexpectedFrame(frame, "a connection");
  }
}
