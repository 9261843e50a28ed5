import { describe, expect, it } from "vitest";
import { createOutputCollector } from "./output-collector.ts";

function bytes(length: number, start = 0): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (start + i) % 251);
}

describe("createOutputCollector", () => {
  it("keeps everything under the cap", () => {
    const collector = createOutputCollector(100);
    collector.push(bytes(40));
    collector.push(bytes(60, 40));
    expect(collector.bytes()).toEqual(bytes(100));
    expect(collector.truncated).toBe(false);
    expect(collector.omittedBytes).toBe(0);
  });

  it("keeps the first and last halves and drops the middle, whatever the chunk sizes", () => {
    const all = bytes(10_000);
    for (const chunkSize of [1, 7, 50, 333, 4999, 10_000]) {
      for (const max of [0, 1, 2, 101, 1000]) {
        const collector = createOutputCollector(max);
        for (let offset = 0; offset < all.length; offset += chunkSize) {
          collector.push(all.subarray(offset, offset + chunkSize));
        }
        const head = Math.ceil(max / 2);
        const tail = max - head;
        const expected = new Uint8Array(max);
        expected.set(all.subarray(0, head));
        expected.set(all.subarray(all.length - tail), head);
        expect(collector.bytes(), `chunk ${chunkSize}, max ${max}`).toEqual(expected);
        expect(collector.truncated).toBe(max < all.length);
        expect(collector.totalBytes).toBe(all.length);
        expect(collector.omittedBytes).toBe(all.length - max);
      }
    }
  });

  it("copies what it keeps, so callers may reuse their buffers", () => {
    const collector = createOutputCollector(10);
    const chunk = bytes(4);
    collector.push(chunk);
    chunk.fill(0);
    const buffer = Buffer.from(bytes(4, 4));
    collector.push(buffer.subarray(0, 4));
    buffer.fill(0);
    expect(collector.bytes()).toEqual(bytes(8));
    expect(Buffer.isBuffer(collector.bytes())).toBe(false);
  });
});
