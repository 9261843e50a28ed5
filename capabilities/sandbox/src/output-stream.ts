/** A web byte stream fed by `push`, buffering at most `maxBytes` unread (later chunks are dropped). */
export interface OutputStream {
  readonly stream: ReadableStream<Uint8Array>;
  push(chunk: Uint8Array): void;
  close(): void;
}

/** A fresh {@link OutputStream}: a spawned process's `stdout` or `stderr`. */
export function createOutputStream(maxBytes: number): OutputStream {
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  let open = true;
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
      if (unread + chunk.length > maxBytes) return;
      controller.enqueue(new Uint8Array(chunk));
    },
    close() {
      if (!open || !controller) return;
      open = false;
      controller.close();
    },
  };
}
