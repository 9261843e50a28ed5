/** What {@link HeadReader.push} found. */
export type HeadReading =
  /** No terminator yet, and fewer than `maxBytes` head bytes: push more. */
  | { state: "incomplete" }
  /** `maxBytes` head bytes came without the terminator. */
  | { state: "too-large" }
  /** The head (without its terminator), and what followed it in the chunk that completed it. */
  | { state: "complete"; head: Buffer; rest: Buffer };

/** Reads the head of a byte stream; see {@link createHeadReader}. */
export interface HeadReader {
  /** Takes the stream's next bytes. Once it answered `complete` or `too-large` the reader is done: push no more. */
  push(chunk: Uint8Array): HeadReading;
  /** Bytes held now: never more than `maxBytes` plus the terminator's length. */
  readonly bufferedBytes: number;
}

/**
 * Reads the head of an untrusted byte stream, up to its `terminator` (a line's `\n`, a request head's blank line),
 * from chunks split anywhere. The head is complete when the terminator starts within its first `maxBytes` bytes
 * and too large otherwise: the same answer however the stream is split (as pai-egress-relay decides it). Only the
 * bytes that can still belong to the head are held, searched once each.
 *
 * @example
 * const reader = createHeadReader({ terminator: "\r\n\r\n", maxBytes: 32 * 1024 });
 * socket.on("data", (chunk) => { const reading = reader.push(chunk); ... });
 */
export function createHeadReader(options: { terminator: string; maxBytes: number }): HeadReader {
  const terminator = Buffer.from(options.terminator, "latin1");
  const limit = options.maxBytes + terminator.length;
  let held = Buffer.alloc(0);
  let done = false;

  return {
    get bufferedBytes() {
      return held.length;
    },
    push(chunk) {
      if (done) throw new Error("createHeadReader: push after the head was read");
      const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      const room = limit - held.length;
      // Where a terminator may start that the last search could not see (it ended inside what came before).
      const from = Math.max(0, held.length - terminator.length + 1);
      held = Buffer.concat([held, bytes.subarray(0, room)]);
      const at = held.indexOf(terminator, from);
      if (at >= 0) {
        done = true;
        const head = held.subarray(0, at);
        const rest = Buffer.concat([held.subarray(at + terminator.length), bytes.subarray(room)]);
        held = Buffer.alloc(0);
        return { state: "complete", head, rest };
      }
      if (held.length < limit) return { state: "incomplete" };
      done = true;
      held = Buffer.alloc(0);
      return { state: "too-large" };
    },
  };
}
