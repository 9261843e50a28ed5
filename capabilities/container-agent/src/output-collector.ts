/** Collected output of one stream; see {@link createOutputCollector}. */
export interface OutputCollector {
  /** Adds the next chunk (copied; the caller may reuse it). */
  push(chunk: Uint8Array): void;
  /** True once more than `maxBytes` arrived. */
  readonly truncated: boolean;
  /** Every byte that arrived, kept or not. */
  readonly totalBytes: number;
  /** Bytes dropped from the middle. */
  readonly omittedBytes: number;
  /** The kept bytes: the head, then the tail (no marker between them). */
  bytes(): Uint8Array;
}

/**
 * Keeps at most `maxBytes` of a stream: the first `ceil(maxBytes / 2)` bytes and the last `floor(maxBytes / 2)`,
 * dropping the middle once the stream outgrows the cap. Memory stays within about `maxBytes` plus one chunk.
 */
export function createOutputCollector(maxBytes: number): OutputCollector {
  const headLimit = Math.ceil(maxBytes / 2);
  const tailLimit = maxBytes - headLimit;
  let head: Uint8Array[] = [];
  let headLength = 0;
  let tail: Uint8Array[] = [];
  let tailLength = 0;
  let total = 0;

  return {
    get truncated() {
      return total > maxBytes;
    },
    get totalBytes() {
      return total;
    },
    get omittedBytes() {
      return total - headLength - tailLength;
    },
    push(chunk) {
      if (chunk.length === 0) return;
      total += chunk.length;
      let rest = chunk;
      if (headLength < headLimit) {
        const take = Math.min(headLimit - headLength, rest.length);
        head.push(copy(rest, 0, take));
        headLength += take;
        if (head.length > 256) head = [concatBytes(head, headLength)];
        rest = rest.subarray(take);
        if (rest.length === 0) return;
      }
      if (tailLimit === 0) return;
      if (rest.length >= tailLimit) {
        tail = [copy(rest, rest.length - tailLimit, rest.length)];
        tailLength = tailLimit;
        return;
      }
      tail.push(copy(rest, 0, rest.length));
      tailLength += rest.length;
      while (tailLength > tailLimit) {
        const first = tail[0]!;
        const excess = tailLength - tailLimit;
        if (first.length <= excess) {
          tail.shift();
          tailLength -= first.length;
        } else {
          tail[0] = first.subarray(excess);
          tailLength -= excess;
        }
      }
      if (tail.length > 256) tail = [concatBytes(tail, tailLength)];
    },
    bytes() {
      return concatBytes([...head, ...tail], headLength + tailLength);
    },
  };
}

/** A plain copy (a Buffer's `slice` would be a view). */
function copy(bytes: Uint8Array, start: number, end: number): Uint8Array {
  return new Uint8Array(bytes.subarray(start, end));
}

function concatBytes(parts: readonly Uint8Array[], length: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
