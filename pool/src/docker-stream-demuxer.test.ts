import { describe, expect, it } from "vitest";
import { createDockerStreamDemuxer } from "./docker-stream-demuxer.ts";

function frame(stream: number, text: string): Buffer {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

function collect(chunks: Buffer[]) {
  const stdout: Buffer[] = [];
  const stderr: Buffer[] = [];
  const demuxer = createDockerStreamDemuxer((stream, payload) => {
    (stream === 2 ? stderr : stdout).push(Buffer.from(payload));
  });
  for (const chunk of chunks) demuxer.write(chunk);
  return {
    stdout: Buffer.concat(stdout).toString(),
    stderr: Buffer.concat(stderr).toString(),
    incomplete: demuxer.incomplete,
  };
}

describe("createDockerStreamDemuxer", () => {
  it("splits stdout and stderr frames", () => {
    const data = Buffer.concat([frame(1, "hello "), frame(2, "oops"), frame(1, "world"), frame(1, "")]);
    expect(collect([data])).toEqual({ stdout: "hello world", stderr: "oops", incomplete: false });
  });

  it("handles frames and headers split at every byte", () => {
    const data = Buffer.concat([frame(1, "abc"), frame(2, "déf"), frame(1, "ghi")]);
    const bytes = [...data].map((b) => Buffer.from([b]));
    expect(collect(bytes)).toEqual({ stdout: "abcghi", stderr: "déf", incomplete: false });
  });

  it("flags a stream cut in the middle of a frame", () => {
    const data = frame(1, "abcdef");
    expect(collect([data.subarray(0, 10)]).incomplete).toBe(true);
  });

  it("passes a non-multiplexed (TTY) stream through as stdout", () => {
    expect(collect([Buffer.from("plain tty output")])).toEqual({
      stdout: "plain tty output",
      stderr: "",
      incomplete: false,
    });
  });
});
