import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ContainerAgentError } from "../container-agent-error.ts";
import { createFrameDecoder, encodeFrame } from "../frame-codec.ts";
import { decodeRelayReport, RELAY_REPORT_TYPES, type RelayReport } from "./relay-report.ts";

// Property runs: a quick number in `npm test`, many in `npm run fuzz` (PAI_FUZZ_RUNS).
fc.configureGlobal({ numRuns: Number(process.env.PAI_FUZZ_RUNS) || 300 });

const u32 = fc.nat({ max: 0xffffffff });
const u64 = fc.bigInt({ min: 0n, max: BigInt(Number.MAX_SAFE_INTEGER) });

/** A report and its frame as pai-egress-relay writes it (send_frame, send_totals). */
const reportFrame = fc.oneof(
  fc.string({ maxLength: 16 }).map((version) => ({
    frame: encodeFrame(0x81, 0, Buffer.from(version, "latin1")),
    report: { kind: "ready" } as RelayReport,
  })),
  fc.tuple(u32, u32).map(([refused, pending]) => {
    const payload = Buffer.alloc(8);
    payload.writeUInt32BE(refused, 0);
    payload.writeUInt32BE(pending, 4);
    return {
      frame: encodeFrame(0x8a, 0, payload),
      report: { kind: "counts", refused, pending } as RelayReport,
    };
  }),
  fc.tuple(u32, u32).map(([id, admission]) => {
    const payload = Buffer.alloc(4);
    payload.writeUInt32BE(admission);
    return { frame: encodeFrame(0x82, id, payload), report: { kind: "open", id, admission } as RelayReport };
  }),
  fc.tuple(u32, fc.uint8Array({ maxLength: 64 })).map(([id, head]) => ({
    frame: encodeFrame(0x83, id, head),
    report: { kind: "head", id, head: Buffer.from(head).toString("latin1") } as RelayReport,
  })),
  u32.map((id) => ({
    frame: encodeFrame(0x84, id),
    report: { kind: "head", id, head: null } as RelayReport,
  })),
  fc.tuple(u32, fc.nat({ max: 15 })).map(([id, index]) => ({
    frame: encodeFrame(0x85, id, Uint8Array.of(index)),
    report: { kind: "connected", id, index } as RelayReport,
  })),
  fc.tuple(u32, fc.constantFrom("ETIMEDOUT", "ECONNREFUSED", "EACCES")).map(([id, error]) => ({
    frame: encodeFrame(0x86, id, Buffer.from(error)),
    report: { kind: "failed", id, error } as RelayReport,
  })),
  fc.tuple(u32, fc.integer({ min: 0, max: 999 })).map(([id, status]) => ({
    frame: encodeFrame(0x87, id, Uint8Array.of(status >> 8, status & 0xff)),
    report: { kind: "status", id, status } as RelayReport,
  })),
  fc
    .tuple(u32, fc.constantFrom("bytes" as const, "closed" as const), u64, u64)
    .map(([id, kind, up, down]) => {
      const payload = Buffer.alloc(16);
      payload.writeBigUInt64BE(up, 0);
      payload.writeBigUInt64BE(down, 8);
      return {
        frame: encodeFrame(kind === "bytes" ? 0x88 : 0x89, id, payload),
        report: { kind, id, up: Number(up), down: Number(down) } as RelayReport,
      };
    }),
);

describe("decodeRelayReport (properties)", () => {
  it("decodes every report the relay writes back to what it said", () => {
    fc.assert(
      fc.property(fc.array(reportFrame, { maxLength: 8 }), (sent) => {
        const got: RelayReport[] = [];
        const decoder = createFrameDecoder({
          frameTypes: RELAY_REPORT_TYPES,
          onFrame: (frame) => got.push(decodeRelayReport(frame)),
        });
        decoder.write(Buffer.concat(sent.map(({ frame }) => frame)));
        decoder.end();
        expect(got).toEqual(sent.map(({ report }) => report));
      }),
    );
  });

  it("on any frame, decodes it or throws SANDBOX_PROTOCOL, nothing else", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.constantFrom(...RELAY_REPORT_TYPES), fc.nat({ max: 0xff })),
        u32,
        fc.uint8Array({ maxLength: 24 }),
        (type, requestId, payload) => {
          try {
            decodeRelayReport({ type, requestId, payload });
          } catch (error) {
            expect(
              ContainerAgentError.isInstance(error) && error.code === "SANDBOX_PROTOCOL",
              String(error),
            ).toBe(true);
          }
        },
      ),
    );
  });
});
