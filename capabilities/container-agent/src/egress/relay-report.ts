import { protocolError } from "../container-agent-error.ts";
import type { Frame } from "../frame-codec.ts";

/** Control frames from pai-egress-relay (see pai-egress-relay.c). */
const Report = {
  ready: 0x81,
  open: 0x82,
  head: 0x83,
  tooBig: 0x84,
  connected: 0x85,
  failed: 0x86,
  status: 0x87,
  bytes: 0x88,
  closed: 0x89,
  counts: 0x8a,
} as const;

/** The frame types the relay sends. */
export const RELAY_REPORT_TYPES: ReadonlySet<number> = new Set(Object.values(Report));

/** One control frame from the relay, decoded; `id` is the connection's. */
export type RelayReport =
  | { kind: "ready" }
  /** Connections refused so far, and those open without their header yet. */
  | { kind: "counts"; refused: number; pending: number }
  /** A connection whose token was admission `admission`. */
  | { kind: "open"; id: number; admission: number }
  /** Its request head (latin1, without its blank line), or `null`: none within 32 KiB. */
  | { kind: "head"; id: number; head: string | null }
  /** Connected to the address at `index` of those the CONNECT named. */
  | { kind: "connected"; id: number; index: number }
  /** No address answered: the last one's errno name. */
  | { kind: "failed"; id: number; error: string }
  /** The upstream's HTTP status. */
  | { kind: "status"; id: number; status: number }
  /** Bytes up and down so far (`bytes`), or in all (`closed`: the id is then forgotten). */
  | { kind: "bytes" | "closed"; id: number; up: number; down: number };

/** Payload bytes each fixed-size report carries. */
const PAYLOAD_BYTES: Partial<Record<number, number>> = {
  [Report.open]: 4,
  [Report.tooBig]: 0,
  [Report.connected]: 1,
  [Report.status]: 2,
  [Report.bytes]: 16,
  [Report.closed]: 16,
  [Report.counts]: 8,
};

/**
 * Decodes one frame of the relay's control channel. A frame of a type the relay does not send, or whose payload has
 * the wrong size for its type, is a `SANDBOX_PROTOCOL` error: nothing else is thrown.
 */
export function decodeRelayReport({ type, requestId: id, payload }: Frame): RelayReport {
  const size = PAYLOAD_BYTES[type];
  if (!RELAY_REPORT_TYPES.has(type) || (size !== undefined && payload.length !== size)) {
    throw protocolError(
      `protocol error: egress relay frame 0x${type.toString(16)} with ${payload.length} payload bytes`,
    );
  }
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  switch (type) {
    case Report.ready:
      return { kind: "ready" };
    case Report.counts:
      return { kind: "counts", refused: view.getUint32(0), pending: view.getUint32(4) };
    case Report.open:
      return { kind: "open", id, admission: view.getUint32(0) };
    case Report.head:
      return { kind: "head", id, head: Buffer.from(payload).toString("latin1") };
    case Report.tooBig:
      return { kind: "head", id, head: null };
    case Report.connected:
      return { kind: "connected", id, index: view.getUint8(0) };
    case Report.failed:
      return { kind: "failed", id, error: Buffer.from(payload).toString("latin1") };
    case Report.status:
      return { kind: "status", id, status: view.getUint16(0) };
    default:
      return {
        kind: type === Report.bytes ? "bytes" : "closed",
        id,
        up: Number(view.getBigUint64(0)),
        down: Number(view.getBigUint64(8)),
      };
  }
}
