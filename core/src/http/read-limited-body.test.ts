import { describe, expect, it } from "vitest";
import { readLimitedBody } from "./read-limited-body.ts";

/** A body that yields `chunks` one by one and records how far it was read and whether it was cancelled. */
function trackedBody(chunks: Uint8Array[]) {
  const state = { pulled: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = chunks[state.pulled];
      if (!next) return controller.close();
      state.pulled += 1;
      controller.enqueue(next);
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { stream, state };
}

const post = (body: ReadableStream<Uint8Array> | string, headers: Record<string, string> = {}) =>
  new Request("http://127.0.0.1/api/chat", { method: "POST", body, headers, duplex: "half" } as RequestInit);

describe("readLimitedBody", () => {
  it("reads a body within the limit as text", async () => {
    expect(await readLimitedBody(post('{"é":1}'), { maxBytes: 9 })).toBe('{"é":1}');
  });

  it("cancels a streamed body the moment it passes the limit, without reading the rest", async () => {
    const chunks = Array.from({ length: 100 }, () => new Uint8Array(1000).fill(97));
    const { stream, state } = trackedBody(chunks);
    await expect(readLimitedBody(post(stream), { maxBytes: 2500 })).rejects.toMatchObject({
      code: "BODY_TOO_LARGE",
      details: { maxBytes: 2500 },
    });
    expect(state.cancelled).toBe(true);
    expect(state.pulled).toBeLessThanOrEqual(4);
  });

  it("refuses a declared Content-Length over the limit before reading a byte", async () => {
    const { stream, state } = trackedBody([new Uint8Array(10)]);
    await expect(
      readLimitedBody(post(stream, { "content-length": "5000" }), { maxBytes: 100 }),
    ).rejects.toMatchObject({ code: "BODY_TOO_LARGE" });
    expect(state.pulled).toBe(0);
    expect(state.cancelled).toBe(true);
  });

  it("refuses a body that is not UTF-8", async () => {
    const { stream } = trackedBody([new Uint8Array([0xff, 0xfe, 0xfd])]);
    await expect(readLimitedBody(post(stream), { maxBytes: 100 })).rejects.toMatchObject({
      code: "BAD_REQUEST",
    });
  });
});
