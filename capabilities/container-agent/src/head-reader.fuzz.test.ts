import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createHeadReader, type HeadReading } from "./head-reader.ts";

// Property runs: a quick number in `npm test`, many in `npm run fuzz` (PAI_FUZZ_RUNS).
fc.configureGlobal({ numRuns: Number(process.env.PAI_FUZZ_RUNS) || 300 });

/** Bytes over a small alphabet, so terminators and their pieces come often. */
const streamBytes = (maxLength: number) =>
  fc.array(fc.constantFrom(10, 13, 65, 0, 255), { maxLength }).map((bytes) => Buffer.from(bytes));

/** Cut points: the stream in pieces of any size, empty ones included. */
function split(bytes: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let at = 0;
  for (const point of [...points, bytes.length]) {
    pieces.push(bytes.subarray(at, point));
    at = point;
  }
  return pieces;
}

/** What reading the whole stream means, by definition. */
function expected(bytes: Buffer, terminator: Buffer, maxBytes: number): HeadReading["state"] {
  const at = bytes.indexOf(terminator);
  if (at >= 0 && at <= maxBytes) return "complete";
  return bytes.length >= maxBytes + terminator.length ? "too-large" : "incomplete";
}

describe("createHeadReader (properties)", () => {
  const cases = [
    { terminator: "\n", maxBytes: 16 },
    { terminator: "\r\n\r\n", maxBytes: 24 },
    { terminator: "\r\n\r\n", maxBytes: 0 },
  ];
  for (const { terminator, maxBytes } of cases) {
    const term = Buffer.from(terminator, "latin1");

    it(`gives the same answer however the stream is split, holding at most maxBytes + ${term.length} bytes (${JSON.stringify(terminator)}, ${maxBytes})`, () => {
      fc.assert(
        fc.property(streamBytes(3 * maxBytes + 12), fc.array(fc.nat(), { maxLength: 12 }), (bytes, cuts) => {
          const reader = createHeadReader({ terminator, maxBytes });
          let reading: HeadReading = { state: "incomplete" };
          let consumed = 0;
          for (const piece of split(bytes, cuts)) {
            reading = reader.push(piece);
            consumed += piece.length;
            expect(reader.bufferedBytes).toBeLessThanOrEqual(maxBytes + term.length);
            if (reading.state !== "incomplete") break;
          }
          const state = expected(bytes.subarray(0, consumed), term, maxBytes);
          expect(reading.state).toBe(state);
          if (reading.state === "complete") {
            const at = bytes.indexOf(term);
            expect(reading.head).toEqual(bytes.subarray(0, at));
            expect(reading.rest).toEqual(bytes.subarray(at + term.length, consumed));
          }
        }),
      );
    });
  }

  it("reads a head of exactly maxBytes and refuses one byte more, split or whole", () => {
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 6 }), fc.boolean(), (cuts, over) => {
        const head = Buffer.alloc(over ? 33 : 32, 65);
        const bytes = Buffer.concat([head, Buffer.from("\r\n\r\nbody")]);
        const reader = createHeadReader({ terminator: "\r\n\r\n", maxBytes: 32 });
        let reading: HeadReading = { state: "incomplete" };
        for (const piece of split(bytes, cuts)) {
          reading = reader.push(piece);
          if (reading.state !== "incomplete") break;
        }
        expect(reading.state).toBe(over ? "too-large" : "complete");
      }),
    );
  });
});
