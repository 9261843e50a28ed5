import { PaiError } from "../errors/pai-error.ts";

/** What {@link readLimitedBody} accepts. */
export interface ReadLimitedBodyOptions {
  /** The most bytes the body may have. */
  maxBytes: number;
}

/**
 * Reads a request body as UTF-8 text, never holding more than `maxBytes` of it. A `Content-Length` over the
 * limit is refused before a byte is read; otherwise bytes are counted as they arrive and the body is cancelled
 * the moment they pass the limit. Either way it rejects with `BODY_TOO_LARGE` (HTTP 413); a body that is not
 * UTF-8 is a `BAD_REQUEST`.
 */
export async function readLimitedBody(request: Request, options: ReadLimitedBodyOptions): Promise<string> {
  const { maxBytes } = options;
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (declared > maxBytes) {
    await request.body?.cancel().catch(() => undefined);
    throw tooLarge(maxBytes, `its Content-Length is ${declared}`);
  }
  if (!request.body) return "";
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let received = 0;
  try {
    for (;;) {
      let next: Awaited<ReturnType<typeof reader.read>>;
      try {
        next = await reader.read();
      } catch (error) {
        throw new PaiError("BAD_REQUEST", "the body could not be read to its end", { cause: error });
      }
      if (next.done) break;
      received += next.value.byteLength;
      if (received > maxBytes) {
        await reader.cancel().catch(() => undefined);
        throw tooLarge(maxBytes, "it passed the limit while it streamed");
      }
      chunks.push(next.value);
    }
  } finally {
    reader.releaseLock();
  }
  const bytes = new Uint8Array(received);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (error) {
    throw new PaiError("BAD_REQUEST", "the body is not UTF-8 text", { cause: error });
  }
}

function tooLarge(maxBytes: number, why: string): PaiError {
  return new PaiError("BODY_TOO_LARGE", `the request body is over the ${maxBytes}-byte limit: ${why}`, {
    details: { maxBytes },
  });
}
