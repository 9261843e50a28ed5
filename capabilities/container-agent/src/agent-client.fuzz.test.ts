// Properties of the host's agent client against a hostile agent: after a valid HELLO, with a command, a file read,
// a ping and a port connection in flight, the "agent" sends any sequence of frames — every agent → host type and
// unknown ones, any request id, any payload — in any split, then hangs up. Every request settles (a value, or a
// ContainerAgentError), nothing throws out of the client, and the connection's end is told once.
import { PassThrough } from "node:stream";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createAgentClient } from "./agent-client.ts";
import { AGENT_PROTOCOL_VERSION, FrameType } from "./agent-protocol.ts";
import { ContainerAgentError } from "./container-agent-error.ts";
import { encodeFrame } from "./frame-codec.ts";

// Property runs: a quick number in `npm test`, many in `npm run fuzz` (PAI_FUZZ_RUNS).
fc.configureGlobal({ numRuns: Number(process.env.PAI_FUZZ_RUNS) || 300 });

const agentTypes = Object.values(FrameType).filter((type) => type >= 0x80);

const frames = fc.array(
  fc.record({
    type: fc.oneof(fc.constantFrom(...agentTypes), fc.integer({ min: 0, max: 255 })),
    // The requests in flight get ids 1–4; 0 and others are nobody's.
    requestId: fc.oneof(fc.integer({ min: 0, max: 6 }), fc.nat()),
    payload: fc.oneof(
      fc.uint8Array({ maxLength: 64 }),
      fc.integer({ min: 0, max: 8 }).map((length) => new Uint8Array(length)),
    ),
  }),
  { maxLength: 24 },
);

/** Where to cut the stream of frames into writes. */
const cuts = fc.array(fc.integer({ min: 1, max: 64 }), { maxLength: 16 });

/** Settles `promise` to its outcome: the value, or the error it rejected with. */
const outcome = (promise: Promise<unknown>) =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

describe("the agent client under any frames from a hostile agent", () => {
  it("settles every request with a value or a ContainerAgentError, and tells its end once", async () => {
    await fc.assert(
      fc.asyncProperty(frames, cuts, async (sent, cutAt) => {
        const toHost = new PassThrough();
        const toAgent = new PassThrough();
        toAgent.resume(); // what the client sends is not read here
        const ends: unknown[] = [];
        const client = createAgentClient({
          stream: { readable: toHost, writable: toAgent },
          onClose: (error) => ends.push(error),
        });
        const hello = new Uint8Array(22 + 4);
        new DataView(hello.buffer).setUint16(0, AGENT_PROTOCOL_VERSION);
        hello.set(new TextEncoder().encode("fuzz"), 22);
        toHost.write(encodeFrame(FrameType.Hello, 0, hello));
        await client.hello;

        const spawned = client.spawn({ argv: ["x"] });
        const inFlight = [
          outcome(spawned.wait()),
          outcome(client.readFile("/workspace/a.txt", { root: "/workspace" })),
          outcome(client.ping()),
          outcome(client.connect(8080, {})),
        ];
        const bytes = Buffer.concat(
          sent.map((frame) => encodeFrame(frame.type, frame.requestId, frame.payload)),
        );
        let at = 0;
        for (const cut of cutAt) {
          if (at >= bytes.length) break;
          toHost.write(bytes.subarray(at, at + cut));
          at += cut;
        }
        toHost.end(bytes.subarray(at));

        // A request left waiting is the failure this looks for: name it rather than time the test out.
        const names = ["spawn", "readFile", "ping", "connect"];
        const waiting = new Set(names);
        inFlight.forEach((settled, index) => void settled.then(() => waiting.delete(names[index]!)));
        let timer: NodeJS.Timeout | undefined;
        const hung = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`left waiting: ${[...waiting].join(", ")}`)), 2000);
        });
        try {
          for (const settled of await Promise.race([Promise.all(inFlight), hung])) {
            if ("error" in settled) expect(settled.error).toBeInstanceOf(ContainerAgentError);
          }
        } finally {
          clearTimeout(timer);
        }
        await client.whenClosed;
        expect(ends).toHaveLength(1);
        expect(ends[0] === undefined || ends[0] instanceof ContainerAgentError).toBe(true);
        client.close();
      }),
    );
  }, 120_000);
});
