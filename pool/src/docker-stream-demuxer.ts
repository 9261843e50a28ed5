/** Stream numbers of Docker's multiplexed attach/exec protocol. */
export type DockerStreamType = 0 | 1 | 2;

/** Incremental parser of Docker's multiplexed stream; see {@link createDockerStreamDemuxer}. */
export interface DockerStreamDemuxer {
  /** Feeds the next chunk read from the connection. */
  write(chunk: Uint8Array): void;
  /** True when the input ended in the middle of a frame (header or payload). */
  readonly incomplete: boolean;
}

/**
 * Parses Docker's multiplexed stream (used when `Tty` is false): frames of an 8-byte header — stream type
 * (0 stdin, 1 stdout, 2 stderr), three zero bytes, payload length as big-endian uint32 — and the payload.
 * Payloads are handed on as they arrive, possibly in several pieces, without copying. A header with an unknown
 * stream type means the stream is not multiplexed (a TTY); from then on everything goes to stdout (1).
 */
export function createDockerStreamDemuxer(
  onData: (stream: DockerStreamType, payload: Uint8Array) => void,
): DockerStreamDemuxer {
  const header = new Uint8Array(8);
  let headerLength = 0;
  let streamType: DockerStreamType = 1;
  let remaining = 0;
  let raw = false;

  return {
    get incomplete() {
      return !raw && (headerLength > 0 || remaining > 0);
    },
    write(chunk) {
      if (raw) {
        if (chunk.length > 0) onData(1, chunk);
        return;
      }
      let offset = 0;
      while (offset < chunk.length) {
        if (remaining > 0) {
          const take = Math.min(remaining, chunk.length - offset);
          onData(streamType, chunk.subarray(offset, offset + take));
          offset += take;
          remaining -= take;
          continue;
        }
        const take = Math.min(8 - headerLength, chunk.length - offset);
        header.set(chunk.subarray(offset, offset + take), headerLength);
        headerLength += take;
        offset += take;
        if (headerLength < 8) break;
        headerLength = 0;
        const type = header[0];
        if (type !== 0 && type !== 1 && type !== 2) {
          raw = true;
          onData(1, header.slice());
          if (offset < chunk.length) onData(1, chunk.subarray(offset));
          return;
        }
        streamType = type;
        remaining = new DataView(header.buffer, header.byteOffset, 8).getUint32(4, false);
      }
    },
  };
}
