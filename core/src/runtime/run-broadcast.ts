/**
 * Reads a stream to its end on its own (so a run progresses whether or not anyone listens) and lets any
 * number of subscribers read it from the start: what was already read is replayed, the rest follows live.
 */
export interface RunBroadcast<CHUNK> {
  /** A new reader of the whole stream, from its first chunk. */
  subscribe(): ReadableStream<CHUNK>;
  /** Settles when the source has ended (or failed). */
  readonly finished: Promise<void>;
}

export function createRunBroadcast<CHUNK>(source: ReadableStream<CHUNK>): RunBroadcast<CHUNK> {
  const chunks: CHUNK[] = [];
  const listeners = new Set<() => void>();
  let ended = false;
  let failure: unknown;
  const notify = () => {
    for (const listener of listeners) listener();
  };

  const finished = (async () => {
    const reader = source.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
        notify();
      }
    } catch (error) {
      failure = error;
    } finally {
      ended = true;
      notify();
    }
  })();

  return {
    finished,
    subscribe() {
      let index = 0;
      let wake: (() => void) | undefined;
      const listener = () => wake?.();
      return new ReadableStream<CHUNK>({
        start() {
          listeners.add(listener);
        },
        async pull(controller) {
          while (index >= chunks.length && !ended) {
            await new Promise<void>((resolve) => {
              wake = resolve;
            });
            wake = undefined;
          }
          if (index < chunks.length) {
            while (index < chunks.length) controller.enqueue(chunks[index++] as CHUNK);
            return;
          }
          listeners.delete(listener);
          if (failure !== undefined) controller.error(failure);
          else controller.close();
        },
        cancel() {
          listeners.delete(listener);
        },
      });
    },
  };
}
