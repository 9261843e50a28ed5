import fc from "fast-check";
import tar from "tar-stream";
import { describe, expect, it } from "vitest";
import { transformTar } from "./transform-tar.ts";

// Property runs: a quick number in `npm test`, many in `npm run fuzz` (PAI_FUZZ_RUNS).
fc.configureGlobal({ numRuns: Number(process.env.PAI_FUZZ_RUNS) || 100 });

interface Entry {
  name: string;
  body: Uint8Array;
}

async function pack(entries: Entry[]): Promise<Buffer> {
  const packer = tar.pack();
  for (const { name, body } of entries) packer.entry({ name, type: "file" }, Buffer.from(body));
  packer.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of packer) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function unpack(archive: AsyncIterable<Uint8Array>): Promise<Entry[]> {
  const extract = tar.extract();
  const entries: Entry[] = [];
  const reading = (async () => {
    for await (const entry of extract) {
      const parts: Buffer[] = [];
      for await (const chunk of entry as AsyncIterable<Buffer>) parts.push(chunk);
      entries.push({ name: entry.header.name, body: new Uint8Array(Buffer.concat(parts)) });
    }
  })();
  for await (const chunk of archive) extract.write(chunk);
  (extract as unknown as NodeJS.WritableStream).end();
  await reading;
  return entries;
}

/** The bytes in pieces cut at `cuts`. */
async function* pieces(bytes: Uint8Array, cuts: number[]): AsyncGenerator<Uint8Array> {
  let at = 0;
  for (const point of [...cuts.map((cut) => cut % (bytes.length + 1)).sort((a, b) => a - b), bytes.length]) {
    yield bytes.subarray(at, point);
    at = point;
  }
}

const entryArbitrary = fc.record({
  name: fc.stringMatching(/^[a-z0-9]{1,12}(\/[a-z0-9.]{1,12}){0,3}$/),
  body: fc.uint8Array({ maxLength: 1500 }),
});

describe("transformTar (properties)", () => {
  it("fails done and its stream when the archive ends inside an entry, and throws nothing uncaught", async () => {
    const archive = await pack([
      { name: "a.txt", body: new Uint8Array(11) },
      { name: "b.bin", body: new Uint8Array(3000).fill(1) },
    ]);
    const uncaught: unknown[] = [];
    const listener = (error: unknown) => uncaught.push(error);
    process.on("uncaughtException", listener);
    try {
      // Cut after a header, inside a body, and inside the second entry's body.
      for (const cut of [512, 600, 1536, 3000]) {
        const transformed = transformTar(pieces(archive.subarray(0, cut), []), (header) => header);
        const [read, done] = await Promise.all([
          unpack(transformed.stream).catch((error: unknown) => error),
          transformed.done.catch((error: unknown) => error),
        ]);
        expect(read).toBeInstanceOf(Error);
        expect(done).toBeInstanceOf(Error);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(uncaught).toEqual([]);
    } finally {
      process.off("uncaughtException", listener);
    }
  });

  it("passes every entry and body through unchanged, however the archive is split", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(entryArbitrary, { maxLength: 5 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        async (entries, cuts) => {
          const archive = await pack(entries);
          const transformed = transformTar(pieces(archive, cuts), (header) => header);
          const [out, stats] = await Promise.all([unpack(transformed.stream), transformed.done]);
          expect(out).toEqual(entries);
          expect(stats).toEqual({
            entries: entries.length,
            bytes: entries.reduce((sum, e) => sum + e.body.length, 0),
          });
        },
      ),
    );
  });

  it("settles on any bytes, and on any corruption of a valid archive, with an Error: it never hangs", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ maxLength: 3000 }),
          fc
            .tuple(
              fc.array(entryArbitrary, { minLength: 1, maxLength: 3 }),
              fc.array(fc.tuple(fc.nat(), fc.nat({ max: 255 })), { minLength: 1, maxLength: 4 }),
              fc.nat(),
            )
            .chain(([entries, flips, cut]) =>
              fc.constant(
                pack(entries).then((archive) => {
                  const bytes = Buffer.from(archive);
                  for (const [at, value] of flips) bytes[at % bytes.length] = value;
                  return bytes.subarray(0, bytes.length - (cut % 2 === 0 ? 0 : cut % bytes.length));
                }),
              ),
            ),
        ),
        fc.array(fc.nat(), { maxLength: 8 }),
        async (input, cuts) => {
          const bytes = await input;
          const transformed = transformTar(pieces(bytes, cuts), (header) => header);
          const outcome = await Promise.all([
            unpack(transformed.stream).catch((error: unknown) => error),
            transformed.done.catch((error: unknown) => error),
          ]);
          // Each side either finished (entries read, stats) or failed with an Error.
          for (const value of outcome)
            if (!Array.isArray(value) && !("entries" in (value as object)))
              expect(value).toBeInstanceOf(Error);
        },
      ),
    );
  });
});
