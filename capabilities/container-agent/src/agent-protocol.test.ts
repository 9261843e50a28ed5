import { describe, expect, it } from "vitest";
import {
  decodeExitPayload,
  decodeHelloPayload,
  encodeConnectPayload,
  encodeReadFilePayload,
  encodeSpawnPayload,
  encodeWriteFilePayload,
  MAX_FRAME_PAYLOAD_BYTES,
  maxWriteFileBytes,
  signalName,
  signalNumber,
} from "./agent-protocol.ts";
import { ContainerAgentError } from "./container-agent-error.ts";

describe("agent protocol payloads", () => {
  it("encodes a spawn request as flags, ids, counts and NUL-terminated strings", () => {
    const payload = encodeSpawnPayload({
      argv: ["sh", "-c", "x"],
      cwd: "/w",
      env: { A: "1", B: undefined },
      stdin: true,
      uid: 5,
    });
    expect([...payload.subarray(0, 13)]).toEqual([0x01 | 0x02 | 0x08, 0, 0, 0, 5, 0, 0, 0, 0, 0, 3, 0, 1]);
    expect(new TextDecoder().decode(payload.subarray(13))).toBe("/w\0sh\0-c\0x\0A=1\0");
  });

  it("puts a terminal's size after the counts of a spawn request, with flag 0x40", () => {
    const payload = encodeSpawnPayload({
      argv: ["sh"],
      stdin: true,
      inheritEnv: false,
      pty: { cols: 300, rows: 2 },
    });
    expect([...payload.subarray(0, 17)]).toEqual([
      0x01 | 0x40,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      1,
      0,
      0,
      1,
      44,
      0,
      2,
    ]);
    expect(new TextDecoder().decode(payload.subarray(17))).toBe("\0sh\0");
    expect([...encodeConnectPayload(8080)]).toEqual([0x1f, 0x90]);
  });

  it("refuses what cannot be encoded faithfully", () => {
    const cases = [
      () => encodeSpawnPayload({ argv: [], stdin: false }),
      () => encodeSpawnPayload({ argv: ["sh"], stdin: false, pty: { cols: 0, rows: 24 } }),
      () => encodeSpawnPayload({ argv: ["sh"], stdin: false, pty: { cols: 80, rows: 65536 } }),
      () => encodeConnectPayload(0),
      () => encodeConnectPayload(65536),
      () => encodeSpawnPayload({ argv: ["a\0b"], stdin: false }),
      () => encodeSpawnPayload({ argv: ["sh"], env: { "A=B": "1" }, stdin: false }),
      () => encodeSpawnPayload({ argv: ["sh"], uid: -1, stdin: false }),
      () => encodeSpawnPayload({ argv: ["x".repeat(MAX_FRAME_PAYLOAD_BYTES)], stdin: false }),
      () => encodeWriteFilePayload({ root: "/w", path: "relative", content: new Uint8Array() }),
      () => encodeWriteFilePayload({ root: "w", path: "/w/f", content: new Uint8Array() }),
      () =>
        encodeWriteFilePayload({
          root: "/w",
          path: "/w/f",
          content: new Uint8Array(maxWriteFileBytes("/w/f", "/w") + 1),
        }),
      () => encodeWriteFilePayload({ root: "/w", path: "/w/f", content: new Uint8Array(), mode: 0o10000 }),
      () => encodeReadFilePayload({ root: "/w", path: "/w/f", maxBytes: MAX_FRAME_PAYLOAD_BYTES + 1 }),
    ];
    for (const encode of cases) {
      expect(() => encode()).toThrow(ContainerAgentError);
      try {
        encode();
      } catch (error) {
        expect(ContainerAgentError.hasCode(error, "INVALID_ARGUMENT")).toBe(true);
      }
    }
    expect(
      encodeWriteFilePayload({
        root: "/w",
        path: "/w/f",
        content: new Uint8Array(maxWriteFileBytes("/w/f", "/w")),
      }),
    ).toHaveLength(MAX_FRAME_PAYLOAD_BYTES);
  });

  it("rejects malformed agent payloads as protocol errors", () => {
    expect(decodeExitPayload(new Uint8Array([0, 0, 0, 0, 3]))).toEqual({ exitCode: 3, signal: null });
    expect(decodeExitPayload(new Uint8Array([1, 0, 0, 0, 9]))).toEqual({ exitCode: null, signal: 9 });
    for (const bad of [
      [0, 0, 0, 1, 0],
      [2, 0, 0, 0, 0],
      [1, 0, 0, 0, 0],
      [0, 0, 0],
    ]) {
      expect(() => decodeExitPayload(new Uint8Array(bad))).toThrow(/malformed EXIT/);
    }
    expect(() => decodeHelloPayload(new Uint8Array(3))).toThrow(/malformed HELLO/);
  });

  it("maps signal names with Linux numbering", () => {
    expect(signalNumber("SIGKILL")).toBe(9);
    expect(signalNumber("SIGUSR1")).toBe(10);
    expect(signalName(15)).toBe("SIGTERM");
    expect(() => signalNumber(0)).toThrow(ContainerAgentError);
  });
});
