import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AGENT_FRAME_TYPES, FRAME_HEADER_BYTES, FrameType } from "./agent-protocol.ts";
import { ContainerAgentError } from "./container-agent-error.ts";
import { createFrameDecoder, encodeFrame, type Frame } from "./frame-codec.ts";

// Property runs: a quick number in `npm test`, many in `npm run fuzz` (PAI_FUZZ_RUNS).
fc.configureGlobal({ numRuns: Number(process.env.PAI_FUZZ_RUNS) || 300 });

const MAX_PAYLOAD = 64;
/** Types handed on in pieces, as the agent connection names them (its output and connection bytes). */
const PIECE_TYPES: ReadonlySet<number> = new Set([
  FrameType.Stdout,
  FrameType.Stderr,
  FrameType.PipeOut,
  FrameType.StreamDataOut,
]);
const agentTypes = [...AGENT_FRAME_TYPES];

const frameArbitrary = fc.record({
  type: fc.constantFrom(...agentTypes),
  requestId: fc.nat({ max: 0xffffffff }),
  payload: fc.uint8Array({ maxLength: MAX_PAYLOAD }),
});

function concat(parts: Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(parts));
}

/** The stream in pieces cut at `cuts` (any positions, empty pieces included). */
function split(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = cuts.map((cut) => cut % (bytes.length + 1)).sort((a, b) => a - b);
  const pieces: Uint8Array[] = [];
  let at = 0;
  for (const point of [...points, bytes.length]) {
    pieces.push(bytes.subarray(at, point));
    at = point;
  }
  return pieces;
}

/** Decodes `pieces`; piece-type frames handed on in parts are joined back, as their reader would. */
function decodeAll(
  pieces: Uint8Array[],
  options: { pieceTypes?: ReadonlySet<number>; frameTypes?: ReadonlySet<number> } = {},
) {
  const frames: Frame[] = [];
  const decoder = createFrameDecoder({
    maxPayloadBytes: MAX_PAYLOAD,
    ...options,
    onFrame: (frame) => frames.push({ ...frame, payload: Uint8Array.from(frame.payload) }),
  });
  let error: unknown;
  let maxBuffered = 0;
  try {
    for (const piece of pieces) {
      decoder.write(piece);
      maxBuffered = Math.max(maxBuffered, decoder.bufferedBytes);
    }
    decoder.end();
  } catch (caught) {
    error = caught;
  }
  return { frames, error, maxBuffered, decoder };
}

/** Joins consecutive pieces of one piece-type frame (same type and id) into one frame. */
function joinPieces(frames: Frame[], lengths: number[]): Frame[] {
  const joined: Frame[] = [];
  let index = 0;
  for (const length of lengths) {
    const parts: Uint8Array[] = [];
    let got = 0;
    const first = frames[index]!;
    do {
      const frame = frames[index++]!;
      parts.push(frame.payload);
      got += frame.payload.length;
    } while (got < length);
    joined.push({ type: first.type, requestId: first.requestId, payload: concat(parts) });
  }
  return joined;
}

describe("createFrameDecoder (properties)", () => {
  it("decodes encoded frames back, however the stream is split", () => {
    fc.assert(
      fc.property(
        fc.array(frameArbitrary, { maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 16 }),
        (sent, cuts) => {
          const bytes = concat(sent.map((frame) => encodeFrame(frame.type, frame.requestId, frame.payload)));
          const { frames, error } = decodeAll(split(bytes, cuts), { frameTypes: AGENT_FRAME_TYPES });
          expect(error).toBeUndefined();
          expect(frames).toEqual(sent);
        },
      ),
    );
  });

  it("hands piece-type payloads on in order, in parts that join back to the frame", () => {
    fc.assert(
      fc.property(
        fc.array(frameArbitrary, { maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 16 }),
        (sent, cuts) => {
          const bytes = concat(sent.map((frame) => encodeFrame(frame.type, frame.requestId, frame.payload)));
          const { frames, error } = decodeAll(split(bytes, cuts), { pieceTypes: PIECE_TYPES });
          expect(error).toBeUndefined();
          // A frame with an empty payload comes as one empty frame; any other as parts adding up to it.
          expect(
            joinPieces(
              frames,
              sent.map((frame) => frame.payload.length),
            ),
          ).toEqual(sent);
        },
      ),
    );
  });

  it("on any bytes, throws nothing but SANDBOX_PROTOCOL, holds at most one frame, and stays failed", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 400 }),
        fc.array(fc.nat(), { maxLength: 16 }),
        fc.boolean(),
        (bytes, cuts, pieces) => {
          const { error, maxBuffered, decoder } = decodeAll(split(bytes, cuts), {
            frameTypes: AGENT_FRAME_TYPES,
            ...(pieces ? { pieceTypes: PIECE_TYPES } : {}),
          });
          expect(maxBuffered).toBeLessThanOrEqual(FRAME_HEADER_BYTES + MAX_PAYLOAD);
          if (error === undefined) return;
          expect(
            ContainerAgentError.isInstance(error) && error.code === "SANDBOX_PROTOCOL",
            String(error),
          ).toBe(true);
          expect(() => decoder.write(new Uint8Array(1))).toThrow(error as Error);
        },
      ),
    );
  });

  it("gives the same frames and the same verdict on any bytes, split or whole", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), fc.array(fc.nat(), { maxLength: 16 }), (bytes, cuts) => {
        const whole = decodeAll([bytes], { frameTypes: AGENT_FRAME_TYPES });
        const pieces = decodeAll(split(bytes, cuts), { frameTypes: AGENT_FRAME_TYPES });
        expect(pieces.frames).toEqual(whole.frames);
        expect((pieces.error as Error | undefined)?.message).toEqual(
          (whole.error as Error | undefined)?.message,
        );
      }),
    );
  });
});
