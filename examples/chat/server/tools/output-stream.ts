/** Forwards output chunks to an async writer one at a time, in order, and waits for them on `flush`. */
export interface OutputStream {
  write: (chunk: string) => void;
  /** Resolves once every chunk is written; rejects with the first write's error. */
  flush: () => Promise<void>;
}

/** Serializes `ctx.data.write` calls so streamed chunks keep their order. */
export function createOutputStream(writeChunk: (chunk: string) => Promise<void>): OutputStream {
  let chain: Promise<void> = Promise.resolve();
  return {
    write: (chunk) => {
      if (chunk.length === 0) return;
      chain = chain.then(() => writeChunk(chunk));
    },
    flush: () => chain,
  };
}
