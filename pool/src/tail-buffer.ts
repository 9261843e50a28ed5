/** Keeps the last `maxBytes` bytes written to it. Internal. */
export interface TailBuffer {
  push(chunk: Uint8Array): void;
  readonly truncated: boolean;
  toBuffer(): Buffer;
}

/** A byte collector that keeps the tail when more than `maxBytes` arrive. */
export function createTailBuffer(maxBytes: number): TailBuffer {
  let chunks: Buffer[] = [];
  let length = 0;
  let truncated = false;
  return {
    get truncated() {
      return truncated;
    },
    push(chunk) {
      if (chunk.length === 0) return;
      chunks.push(Buffer.from(chunk));
      length += chunk.length;
      while (length > maxBytes && chunks.length > 0) {
        truncated = true;
        const first = chunks[0]!;
        const excess = length - maxBytes;
        if (first.length <= excess) {
          chunks.shift();
          length -= first.length;
        } else {
          chunks[0] = first.subarray(excess);
          length -= excess;
        }
      }
      if (chunks.length > 64) chunks = [Buffer.concat(chunks)];
    },
    toBuffer() {
      return Buffer.concat(chunks);
    },
  };
}
