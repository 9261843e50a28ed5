/**
 * The chunks of one run, fanned out: pushed one by one (PAI's own chunks) or piped from a stream (the
 * model's), each kept for replay, so any number of subscribers can read the run from its start — what was
 * already sent is replayed, the rest is pushed live. `transform` rewrites or drops (`undefined`) chunks on the way,
 * in the same pass.
 */
export interface RunBroadcast<CHUNK> {
  /** Sends one chunk to every subscriber (ignored once ended). */
  push(chunk: CHUNK): void;
  /** Pushes every chunk of `source` until it ends; rejects with the source's error. */
  pipe(source: ReadableStream<CHUNK>): Promise<void>;
  /** Ends every subscriber's stream (with `error`, when given). */
  end(error?: unknown): void;
  /** A new reader of the whole run, from its first chunk. */
  subscribe(): ReadableStream<CHUNK>;
  /** The chunks sent so far, as a stream that ends there. */
  replay(): ReadableStream<CHUNK>;
}

export function createRunBroadcast<CHUNK>(
  transform: (chunk: CHUNK) => CHUNK | undefined = (chunk) => chunk,
): RunBroadcast<CHUNK> {
  const chunks: CHUNK[] = [];
  const live = new Set<ReadableStreamDefaultController<CHUNK>>();
  let ended = false;
  let failure: unknown;

  const push = (input: CHUNK) => {
    if (ended) return;
    const chunk = transform(input);
    if (chunk === undefined) return;
    chunks.push(chunk);
    for (const controller of live) controller.enqueue(chunk);
  };

  return {
    push,
    async pipe(source) {
      const reader = source.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          push(value);
        }
      } finally {
        reader.releaseLock();
      }
    },
    end(error) {
      if (ended) return;
      ended = true;
      failure = error;
      for (const controller of live) {
        if (error !== undefined) controller.error(error);
        else controller.close();
      }
      live.clear();
    },
    replay() {
      const sent = chunks.slice();
      return new ReadableStream<CHUNK>({
        start(controller) {
          for (const chunk of sent) controller.enqueue(chunk);
          controller.close();
        },
      });
    },
    subscribe() {
      let own: ReadableStreamDefaultController<CHUNK> | undefined;
      return new ReadableStream<CHUNK>({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(chunk);
          if (ended) {
            if (failure !== undefined) controller.error(failure);
            else controller.close();
            return;
          }
          own = controller;
          live.add(controller);
        },
        cancel() {
          if (own) live.delete(own);
        },
      });
    },
  };
}
