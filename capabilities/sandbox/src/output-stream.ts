/**
 * A web byte stream fed by `push`, buffering at most `maxBytes` unread (later chunks are dropped; with `marker`, its
 * bytes for the count dropped are put in the stream where the gap is, once there is room, or at the end).
 */
export interface OutputStream {
  readonly stream: ReadableStream<Uint8Array>;
  push(chunk: Uint8Array): void;
  close(): void;
}

/** A fresh {@link OutputStream}: a spawned process's `stdout` or `stderr`. */
export function createOutputStream(
  maxBytes: number,
  options: { marker?: ((droppedBytes: number) => Uint8Array) | undefined } = {},
): OutputStream {
  const { marker } = options;
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  let open = true;
  /** Bytes dropped since the last marker. */
  let dropped = 0;
  const stream = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
      },
      cancel() {
        open = false;
      },
    },
    // desiredSize is then minus the unread bytes
    new ByteLengthQueuingStrategy({ highWaterMark: 0 }),
  );
  return {
    stream,
    push(chunk) {
      if (!open || !controller) return;
      const unread = -(controller.desiredSize ?? 0);
      const gap = marker && dropped > 0 ? marker(dropped) : undefined;
      if (unread + (gap?.length ?? 0) + chunk.length > maxBytes) {
        dropped += chunk.length;
        return;
      }
      if (gap) controller.enqueue(gap);
      dropped = 0;
      controller.enqueue(new Uint8Array(chunk));
    },
    close() {
      if (!open || !controller) return;
      open = false;
      if (marker && dropped > 0) controller.enqueue(marker(dropped));
      controller.close();
    },
  };
}
