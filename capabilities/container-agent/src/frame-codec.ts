import { FRAME_HEADER_BYTES, MAX_FRAME_PAYLOAD_BYTES } from "./agent-protocol.ts";
import { type ContainerAgentError, protocolError } from "./container-agent-error.ts";

/** One decoded frame. */
export interface Frame {
  /** Frame type (see `FrameType`). */
  type: number;
  /** Request id; 0 for the connection itself. */
  requestId: number;
  /**
   * Payload bytes. May be a view into the chunk it arrived in; chunks are never reused by the decoder, so it
   * stays valid, but copy it before keeping it long if the chunk was large.
   */
  payload: Uint8Array;
}

/** Encodes one frame: `u32 BE payload length | u8 type | u32 BE request id | payload`. */
export function encodeFrame(type: number, requestId: number, payload?: Uint8Array): Uint8Array {
  const header = encodeFrameHeader(type, requestId, payload?.length ?? 0);
  if (!payload || payload.length === 0) return header;
  const frame = new Uint8Array(FRAME_HEADER_BYTES + payload.length);
  frame.set(header);
  frame.set(payload, FRAME_HEADER_BYTES);
  return frame;
}

/** Encodes a frame's header alone, for a payload sent as it is (no copy). */
export function encodeFrameHeader(type: number, requestId: number, length: number): Uint8Array {
  if (!Number.isInteger(type) || type < 0 || type > 0xff) throw new RangeError(`invalid frame type ${type}`);
  if (!Number.isInteger(requestId) || requestId < 0 || requestId > 0xffffffff) {
    throw new RangeError(`invalid request id ${requestId}`);
  }
  if (length > MAX_FRAME_PAYLOAD_BYTES) {
    throw new RangeError(`frame payload of ${length} bytes exceeds ${MAX_FRAME_PAYLOAD_BYTES}`);
  }
  const header = new Uint8Array(FRAME_HEADER_BYTES);
  const view = new DataView(header.buffer);
  view.setUint32(0, length);
  header[4] = type;
  view.setUint32(5, requestId);
  return header;
}

/** Options of {@link createFrameDecoder}. */
export interface FrameDecoderOptions {
  /** Called for every complete frame, in order. An exception thrown here propagates out of `write`. */
  onFrame: (frame: Frame) => void;
  /** Frame types accepted; any other is a protocol error. @default every type */
  frameTypes?: ReadonlySet<number> | undefined;
  /** Largest payload accepted; a larger declared length is a protocol error. @default 1 MiB */
  maxPayloadBytes?: number | undefined;
  /**
   * Types whose payload is a stretch of a byte stream (a connection's or a command's output): a frame of such a
   * type split across chunks is handed on as it arrives, in several `onFrame` calls (each a piece of the payload,
   * in order), instead of gathered into a copy first. @default none
   */
  pieceTypes?: ReadonlySet<number> | undefined;
}

/** Incremental frame parser; see {@link createFrameDecoder}. */
export interface FrameDecoder {
  /**
   * Feeds the next bytes from the stream. Throws a `SANDBOX_PROTOCOL` error on an oversize or unknown frame;
   * after that the decoder is failed and every later call throws the same error.
   */
  write(chunk: Uint8Array): void;
  /** Declares the end of the stream; throws a `SANDBOX_PROTOCOL` error when it ends inside a frame. */
  end(): void;
  /** Bytes held for the frame in progress (never more than a header plus `maxPayloadBytes`). */
  readonly bufferedBytes: number;
}

/**
 * Parses frames from an untrusted byte stream split at arbitrary points. Sizes are checked as soon as a
 * header is complete, so it never holds more than one frame; payloads that arrive whole are handed on
 * without copying.
 */
export function createFrameDecoder(options: FrameDecoderOptions): FrameDecoder {
  const { onFrame, frameTypes } = options;
  const pieceTypes = options.pieceTypes;
  const maxPayloadBytes = options.maxPayloadBytes ?? MAX_FRAME_PAYLOAD_BYTES;
  const header = new Uint8Array(FRAME_HEADER_BYTES);
  const headerView = new DataView(header.buffer);
  let headerLength = 0;
  let type = 0;
  let requestId = 0;
  let payload: Uint8Array | undefined; // set while a split payload is being gathered
  let payloadLength = 0;
  /** Bytes still to come of a piece-type frame being handed on as it arrives. */
  let pieceLeft = 0;
  let failure: ContainerAgentError | undefined;

  const fail = (message: string): never => {
    failure = protocolError(message);
    payload = undefined;
    throw failure;
  };

  const startFrame = () => {
    const length = headerView.getUint32(0);
    type = header[4]!;
    requestId = headerView.getUint32(5);
    headerLength = 0;
    if (frameTypes && !frameTypes.has(type)) {
      fail(
        `protocol error: unknown frame type 0x${type.toString(16).padStart(2, "0")} (request ${requestId})`,
      );
    }
    if (length > maxPayloadBytes) {
      fail(
        `protocol error: frame of ${length} bytes exceeds the limit of ${maxPayloadBytes} (type 0x${type.toString(16)})`,
      );
    }
    return length;
  };

  return {
    get bufferedBytes() {
      return headerLength + payloadLength;
    },
    write(chunk) {
      if (failure) throw failure;
      let offset = 0;
      while (offset < chunk.length) {
        if (pieceLeft > 0) {
          const take = Math.min(pieceLeft, chunk.length - offset);
          pieceLeft -= take;
          offset += take;
          onFrame({ type, requestId, payload: chunk.subarray(offset - take, offset) });
          continue;
        }
        if (payload) {
          const take = Math.min(payload.length - payloadLength, chunk.length - offset);
          payload.set(chunk.subarray(offset, offset + take), payloadLength);
          payloadLength += take;
          offset += take;
          if (payloadLength < payload.length) return;
          const frame = { type, requestId, payload };
          payload = undefined;
          payloadLength = 0;
          onFrame(frame);
          continue;
        }
        if (headerLength === 0 && chunk.length - offset >= FRAME_HEADER_BYTES) {
          header.set(chunk.subarray(offset, offset + FRAME_HEADER_BYTES));
          offset += FRAME_HEADER_BYTES;
        } else {
          const take = Math.min(FRAME_HEADER_BYTES - headerLength, chunk.length - offset);
          header.set(chunk.subarray(offset, offset + take), headerLength);
          headerLength += take;
          offset += take;
          if (headerLength < FRAME_HEADER_BYTES) return;
        }
        const length = startFrame();
        if (chunk.length - offset >= length) {
          const whole = chunk.subarray(offset, offset + length);
          offset += length;
          onFrame({ type, requestId, payload: whole });
        } else if (pieceTypes?.has(type)) {
          pieceLeft = length;
        } else {
          payload = new Uint8Array(length);
          payloadLength = 0;
        }
      }
    },
    end() {
      if (failure) throw failure;
      if (headerLength > 0 || payload || pieceLeft > 0) {
        fail(
          `protocol error: stream ended inside a frame (${headerLength > 0 ? `${headerLength} header bytes` : pieceLeft > 0 ? `${pieceLeft} payload bytes missing` : `${payloadLength} of ${payload?.length} payload bytes`})`,
        );
      }
    },
  };
}
