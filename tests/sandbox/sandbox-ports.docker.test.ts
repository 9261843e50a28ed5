// Ports and terminals of a real sandbox container (network `none`), over its agent's connection: `openPort` reaches
// a server a program listens on inside the container, `exposePort` needs a runtime that serves previews, and
// `openTerminal` gives a shell on a pseudo-terminal, as the sandbox user, with resize, Ctrl-C and a clean close.

import type { Duplex } from "node:stream";
import { ContainerAgentError } from "@pai/container-agent";
import {
  type DockerSandboxBinding,
  dockerSandbox,
  type ProvisionedSandbox,
  SandboxError,
  type SandboxFacade,
} from "@pai/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  dockerOptedOut,
  poolContainers,
  removePoolContainers,
  sandboxImage,
  uniquePoolId,
  waitFor,
} from "./docker-helpers.ts";

const poolId = uniquePoolId("ports");
let binding: DockerSandboxBinding;
let resource: ProvisionedSandbox;
let box: SandboxFacade;

/** Sends `request` through `stream` and reads the whole answer (the server closes after it: HTTP/1.0). */
async function exchange(stream: Duplex, request: string): Promise<string> {
  const chunks: Buffer[] = [];
  stream.on("data", (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise<void>((resolve, reject) => {
    stream.on("end", resolve);
    stream.on("error", reject);
  });
  stream.write(request);
  await ended;
  stream.destroy();
  return Buffer.concat(chunks).toString();
}

function codeOf(error: unknown): string | undefined {
  return SandboxError.isInstance(error) || ContainerAgentError.isInstance(error) ? error.code : String(error);
}

describe.skipIf(dockerOptedOut)("sandbox ports and terminals (through the in-container agent)", () => {
  beforeAll(async () => {
    binding = dockerSandbox({ image: sandboxImage, poolId, pool: { min: 0, max: 1 } });
    resource = await binding.provision({
      leaseKey: "thread:ports",
      lifetime: "thread",
      signal: new AbortController().signal,
    });
    box = resource.facade;
  });

  afterAll(async () => {
    try {
      await resource?.release();
      await binding?.close();
      expect(await poolContainers(poolId)).toEqual([]);
    } finally {
      await removePoolContainers(poolId);
    }
  });

  describe("openPort", () => {
    it("reaches python3 -m http.server started with spawn: a GET through the connection", async () => {
      await box.writeFiles([{ path: "site/hello.txt", content: "hello from the sandbox\n" }]);
      const server = await box.spawn({
        command: "python3",
        args: ["-m", "http.server", "8000", "--bind", "127.0.0.1", "--directory", "site"],
      });
      try {
        const signal = new AbortController().signal;
        let stream: Duplex | undefined;
        await waitFor(async () => {
          stream = await resource.openPort!(8000, signal).catch((error: unknown) => {
            if (codeOf(error) !== "SANDBOX_PORT_CLOSED") throw error;
            return undefined;
          });
          return stream !== undefined;
        }, "the server to listen");
        const answer = await exchange(stream!, "GET /hello.txt HTTP/1.0\r\nHost: localhost:8000\r\n\r\n");
        expect(answer).toMatch(/^HTTP\/1\.0 200 OK\r\n/);
        expect(answer.endsWith("\r\n\r\nhello from the sandbox\n")).toBe(true);
        // Another request, another connection: the server saw both come from its own loopback.
        const again = await exchange(await resource.openPort!(8000, signal), "GET /missing HTTP/1.0\r\n\r\n");
        expect(again).toMatch(/^HTTP\/1\.0 404 /);
        expect(server.output().stderr).toMatch(/127\.0\.0\.1 .*"GET \/hello\.txt HTTP\/1\.0" 200/);
      } finally {
        await server.kill("SIGKILL");
      }
    });

    it("answers SANDBOX_PORT_CLOSED when nothing listens, INVALID_ARGUMENT for a bad port", async () => {
      const signal = new AbortController().signal;
      expect(codeOf(await resource.openPort!(8001, signal).catch((error: unknown) => error))).toBe(
        "SANDBOX_PORT_CLOSED",
      );
      for (const port of [0, 65536, 80.5, Number.NaN]) {
        expect(codeOf(await resource.openPort!(port, signal).catch((error: unknown) => error))).toBe(
          "INVALID_ARGUMENT",
        );
      }
    });
  });
});
