import { describe, expect, it } from "vitest";
import {
  AGENT_FRAME_TYPES,
  FRAME_HEADER_BYTES,
  FrameType,
  MAX_FRAME_PAYLOAD_BYTES,
} from "./agent-protocol.ts";
import { ContainerAgentError } from "./container-agent-error.ts";
import { createFrameDecoder, encodeFrame, type Frame } from "./frame-codec.ts";

/** A small deterministic PRNG (mulberry32), so failures reproduce. */
function random(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomBytes(next: () => number, length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = Math.floor(next() * 256);
  return bytes;
}

/** Cuts `bytes` into pieces of random sizes (often 1 byte, sometimes large). */
function split(next: () => number, bytes: Uint8Array): Uint8Array[] {
  const pieces: Uint8Array[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    const r = next();
    const size = r < 0.3 ? 1 : r < 0.6 ? Math.ceil(next() * 16) : Math.ceil(next() * 4096);
    pieces.push(bytes.subarray(offset, offset + size));
    offset += size;
  }
  return pieces;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

function header(length: number, type: number, requestId: number): Uint8Array {
  const bytes = new Uint8Array(FRAME_HEADER_BYTES);
  const view = new DataView(bytes.buffer);
  view.setUint32(0, length);
  bytes[4] = type;
  view.setUint32(5, requestId);
  return bytes;
}

describe("encodeFrame", () => {
  it("writes a big-endian length, the type, a big-endian request id, then the payload", () => {
    expect([...encodeFrame(0x84, 0x01020304, new Uint8Array([9, 8, 7]))]).toEqual([
      0, 0, 0, 3, 0x84, 1, 2, 3, 4, 9, 8, 7,
    ]);
    expect(encodeFrame(FrameType.StdinEof, 5)).toHaveLength(FRAME_HEADER_BYTES);
  });

  it("refuses payloads over the limit and out-of-range ids", () => {
    expect(() => encodeFrame(1, 1, new Uint8Array(MAX_FRAME_PAYLOAD_BYTES + 1))).toThrow(RangeError);
    expect(() => encodeFrame(1, 2 ** 32)).toThrow(RangeError);
    expect(() => encodeFrame(256, 1)).toThrow(RangeError);
  });
});

describe("createFrameDecoder", () => {
  it("decodes the same frames however the stream is split", () => {
    const types = [...AGENT_FRAME_TYPES];
    for (let seed = 1; seed <= 25; seed++) {
      const next = random(seed);
      const sent: Frame[] = [];
      for (let i = 0; i < 40; i++) {
        const size = next() < 0.1 ? Math.floor(next() * 100_000) : Math.floor(next() * 64);
        sent.push({
          type: types[Math.floor(next() * types.length)]!,
          requestId: Math.floor(next() * 2 ** 32),
          payload: randomBytes(next, size),
        });
      }
      const received: Frame[] = [];
      const decoder = createFrameDecoder({
        frameTypes: AGENT_FRAME_TYPES,
        onFrame: (frame) => received.push({ ...frame, payload: frame.payload.slice() }),
      });
      const stream = concat(sent.map((frame) => encodeFrame(frame.type, frame.requestId, frame.payload)));
      for (const piece of split(next, stream)) {
        decoder.write(piece);
        expect(decoder.bufferedBytes).toBeLessThanOrEqual(FRAME_HEADER_BYTES + MAX_FRAME_PAYLOAD_BYTES);
      }
      decoder.end();
      expect(received).toEqual(sent);
    }
  });

  it("rejects an oversize frame as soon as its header arrives, without buffering the payload", () => {
    const decoder = createFrameDecoder({ onFrame: () => {} });
    const bad = header(MAX_FRAME_PAYLOAD_BYTES + 1, FrameType.Stdout, 7);
    decoder.write(bad.subarray(0, 8));
    let error: unknown;
    try {
      decoder.write(bad.subarray(8));
    } catch (caught) {
      error = caught;
    }
    expect(ContainerAgentError.hasCode(error, "SANDBOX_PROTOCOL")).toBe(true);
    expect((error as Error).message).toMatch(/exceeds the limit/);
    expect(decoder.bufferedBytes).toBe(0);
    // Failed for good: later input throws the same error.
    expect(() => decoder.write(encodeFrame(FrameType.Pong, 1))).toThrow(error as Error);
  });

  it("rejects 4 GiB length prefixes", () => {
    const decoder = createFrameDecoder({ onFrame: () => {} });
    expect(() => decoder.write(header(0xffffffff, FrameType.Stdout, 1))).toThrow(/exceeds the limit/);
  });

  it("rejects unknown frame types with a clear error", () => {
    const frames: Frame[] = [];
    const decoder = createFrameDecoder({
      frameTypes: AGENT_FRAME_TYPES,
      onFrame: (frame) => frames.push(frame),
    });
    decoder.write(encodeFrame(FrameType.Pong, 1, new Uint8Array([1])));
    expect(() => decoder.write(encodeFrame(FrameType.Spawn, 2))).toThrow(
      /unknown frame type 0x02 \(request 2\)/,
    );
    expect(frames).toHaveLength(1);
  });

  it("honours a smaller payload limit", () => {
    const decoder = createFrameDecoder({ maxPayloadBytes: 16, onFrame: () => {} });
    decoder.write(encodeFrame(FrameType.Stdout, 1, new Uint8Array(16)));
    expect(() => decoder.write(encodeFrame(FrameType.Stdout, 1, new Uint8Array(17)))).toThrow(
      /exceeds the limit of 16/,
    );
  });

  it("reports a stream that ends inside a frame", () => {
    const decoder = createFrameDecoder({ onFrame: () => {} });
    decoder.write(encodeFrame(FrameType.Stdout, 1, new Uint8Array(10)).subarray(0, 12));
    expect(() => decoder.end()).toThrow(/stream ended inside a frame \(3 of 10 payload bytes\)/);
    const other = createFrameDecoder({ onFrame: () => {} });
    other.write(new Uint8Array([0, 0]));
    expect(() => other.end()).toThrow(/2 header bytes/);
  });

  it("survives random garbage: frames within bounds or a protocol error, nothing else", () => {
    for (let seed = 100; seed < 400; seed++) {
      const next = random(seed);
      const decoder = createFrameDecoder({
        frameTypes: AGENT_FRAME_TYPES,
        maxPayloadBytes: 4096,
        onFrame: (frame) => {
          expect(AGENT_FRAME_TYPES.has(frame.type)).toBe(true);
          expect(frame.payload.length).toBeLessThanOrEqual(4096);
        },
      });
      // Sometimes valid frames first, then garbage.
      const prefix = next() < 0.5 ? [encodeFrame(FrameType.Stdout, 1, randomBytes(next, 100))] : [];
      const stream = concat([...prefix, randomBytes(next, 1 + Math.floor(next() * 20_000))]);
      try {
        for (const piece of split(next, stream)) {
          decoder.write(piece);
          expect(decoder.bufferedBytes).toBeLessThanOrEqual(FRAME_HEADER_BYTES + 4096);
        }
        decoder.end();
      } catch (error) {
        expect(ContainerAgentError.hasCode(error, "SANDBOX_PROTOCOL")).toBe(true);
      }
    }
  });
});

describe("piece types", () => {
  it("hands a split byte-stream frame on piece by piece, in order, and other frames whole", () => {
    const next = random(7);
    const frames = Array.from({ length: 200 }, (_, i) => ({
      type: i % 3 === 0 ? FrameType.Pong : FrameType.StreamDataOut,
      requestId: i % 3 === 0 ? 1 : 0x80000001,
      payload: randomBytes(next, Math.floor(next() * 20000)),
    }));
    const wire = Buffer.concat(
      frames.map((frame) => encodeFrame(frame.type, frame.requestId, frame.payload)),
    );
    const seen: Frame[] = [];
    const decoder = createFrameDecoder({
      onFrame: (frame) => seen.push({ ...frame, payload: new Uint8Array(frame.payload) }),
      pieceTypes: new Set([FrameType.StreamDataOut]),
    });
    for (const piece of split(next, wire)) decoder.write(piece);
    decoder.end();
    const pongs = seen.filter((frame) => frame.type === FrameType.Pong);
    expect(pongs.map((frame) => frame.payload)).toEqual(
      frames.filter((frame) => frame.type === FrameType.Pong).map((frame) => frame.payload),
    );
    const streamed = Buffer.concat(
      seen.filter((frame) => frame.type === FrameType.StreamDataOut).map((f) => f.payload),
    );
    const sent = Buffer.concat(
      frames.filter((frame) => frame.type === FrameType.StreamDataOut).map((f) => f.payload),
    );
    expect(streamed.equals(sent)).toBe(true);
    // pieces: more deliveries than frames, since large frames were split across writes
    expect(seen.length).toBeGreaterThan(frames.length);
  });

  it("fails when the stream ends inside a piece-type frame", () => {
    const decoder = createFrameDecoder({ onFrame: () => {}, pieceTypes: new Set([FrameType.Stdout]) });
    decoder.write(encodeFrame(FrameType.Stdout, 1, new Uint8Array(100)).subarray(0, 50));
    expect(() => decoder.end()).toThrow(/59 payload bytes missing/);
  });
});
