import { Readable } from "node:stream";
import tar, { type Header } from "tar-stream";

/** A header to write: a name and any other fields (tar-stream fills in defaults). */
export type TarHeaderInput = Partial<Header> & Pick<Header, "name">;

/** What {@link transformTar} passed through. */
export interface TransformTarStats {
  /** Entries written. */
  entries: number;
  /** Bytes of file content written. */
  bytes: number;
}

/** A tar stream being rewritten: read `stream`; `done` settles when the input was consumed. */
export interface TransformedTar {
  stream: Readable;
  done: Promise<TransformTarStats>;
}

function write(sink: NodeJS.WritableStream, chunk: Uint8Array): Promise<void> {
  return new Promise((resolve) => {
    if (sink.write(chunk)) resolve();
    else sink.once("drain", () => resolve());
  });
}

/**
 * Rewrites a tar archive entry by entry, streaming: `map` returns the header to write (a new object), or
 * `undefined` to drop the entry; a throw ends the output stream with that error (and `done` rejects).
 * Bodies are copied with backpressure.
 */
export function transformTar(
  input: Readable | AsyncIterable<Uint8Array>,
  map: (header: Header) => TarHeaderInput | undefined,
): TransformedTar {
  const extract = tar.extract();
  const pack = tar.pack();
  const stats: TransformTarStats = { entries: 0, bytes: 0 };
  const source = input instanceof Readable ? input : Readable.from(input);
  source.on("error", (error) => extract.destroy(error));
  source.pipe(extract as unknown as NodeJS.WritableStream);

  const done = (async () => {
    try {
      for await (const entry of extract) {
        const header = map(entry.header);
        if (!header) {
          entry.resume();
          continue;
        }
        const hasBody = header.type === "file" || header.type === "contiguous-file";
        const body = hasBody ? header : { ...header, size: 0 };
        await new Promise<void>((resolve, reject) => {
          const sink = pack.entry(body, (error) => (error ? reject(error) : resolve()));
          // Its error (the archive ended inside this entry, so the pack is destroyed) comes through the callback; it
          // must not also be an unheard `error` event: that is an uncaught exception, the end of the process.
          sink.on("error", () => {});
          void (async () => {
            try {
              for await (const chunk of entry as AsyncIterable<Uint8Array>) {
                if (!hasBody) continue;
                stats.bytes += chunk.length;
                await write(sink as unknown as NodeJS.WritableStream, chunk);
              }
              (sink as unknown as NodeJS.WritableStream).end();
            } catch (error) {
              reject(error);
            }
          })();
        });
        stats.entries++;
      }
      pack.finalize();
      return stats;
    } catch (error) {
      source.destroy();
      pack.destroy(error as Error);
      throw error;
    }
  })();
  done.catch(() => {});
  return { stream: Readable.from(pack), done };
}
