/**
 * Reads a stream to its end on its own (so a run progresses whether or not anyone listens) and lets any
 * number of subscribers read it from the start: what was already read is replayed, the rest is pushed live.
 * `keep` filters chunks on the way (one pass, no extra stream stage).
 */
export interface RunBroadcast<CHUNK> {
  /** A new reader of the whole stream, from its first chunk. */
  subscribe(): ReadableStream<CHUNK>;
  /** Settles when the source has ended (or failed). */
  readonly finished: Promise<void>;
}

export function createRunBroadcast<CHUNK>(
  source: ReadableStream<CHUNK>,
  keep: (chunk: CHUNK) => boolean = () => true,
): RunBroadcast<CHUNK> {
  const chunks: CHUNK[] = [];
  const live = new Set<ReadableStreamDefaultController<CHUNK>>();
  let ended = false;
  let failure: unknown;

  const finished = (async () => {
    const reader = source.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (!keep(value)) continue;
        chunks.push(value);
        for (const controller of live) controller.enqueue(value);
      }
    } catch (error) {
      failure = error;
    } finally {
      ended = true;
      for (const controller of live) {
        if (failure !== undefined) controller.error(failure);
        else controller.close();
      }
      live.clear();
    }
  })();

  return {
    finished,
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
