import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import {
  createAgentRuntime,
  createMemoryThreadStore,
  createPai,
  createPaiHandler,
  defineAgent,
  defineTool,
  toNodeListener,
} from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { dockerSandbox, sandbox } from "@pai/sandbox";
import { execa } from "execa";
import { WebSocket } from "ws";
import { z } from "zod";
import { benchImage, benchPoolId } from "./bench-containers.ts";
import type { BenchRow } from "./bench-row.ts";
import { startBareRelay, startByteServer } from "./byte-relays.ts";
import { summarize } from "./stats.ts";

const MIB = 1024 * 1024;
const PORT_IN_SANDBOX = 8080;

/** bench/byte-server.ts for the sandbox's node: GET /bytes/<n> answers n bytes. */
const BYTE_SERVER_JS = `
const block = Buffer.alloc(1024 * 1024, 0x61);
require("node:http").createServer((request, response) => {
  const size = Number((request.url || "").replace(/^\\/bytes\\//, ""));
  if (!Number.isSafeInteger(size) || size < 0) return void response.writeHead(404).end();
  response.writeHead(200, { "content-type": "application/octet-stream", "content-length": size });
  let left = size;
  const pump = () => {
    while (left > 0) {
      const part = left >= block.length ? block : block.subarray(0, left);
      left -= part.length;
      if (!response.write(part)) return void response.once("drain", pump);
    }
    response.end();
  };
  pump();
}).listen(${PORT_IN_SANDBOX}, "127.0.0.1");
`;

const serve = defineTool({
  id: "serve",
  description: "starts the byte server in the sandbox and exposes it",
  inputSchema: z.object({}),
  capabilities: { sandbox },
  execute: async (ctx) => {
    const box = ctx.capabilities.sandbox;
    await box.writeFiles([{ path: "byte-server.js", content: BYTE_SERVER_JS }]);
    await box.spawn({ command: "node", args: ["byte-server.js"] });
    for (let tries = 0; ; tries++) {
      const probe = await box.runCommand({ command: `exec 3<>/dev/tcp/127.0.0.1/${PORT_IN_SANDBOX}` });
      if (probe.exitCode === 0) break;
      if (tries > 100) throw new Error("the byte server did not listen");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return (await box.exposePort(PORT_IN_SANDBOX)).url;
  },
});

/** `curl` options that print bytes per second, seconds to the first byte and in all, one line per URL. */
const CURL_FORMAT = [
  "-sS",
  "-o",
  "/dev/null",
  "-w",
  "%{speed_download} %{time_starttransfer} %{time_total}\\n",
];

interface CurlSample {
  bytesPerSecond: number;
  totalMs: number;
}

/**
 * `times` fresh curl processes (a new connection each), each fetching `url` with `headers`, run one after another by
 * one shell: this process only serves while they run (spawning each curl from here would keep its event loop — the
 * preview gateway's — busy with the spawn as the request arrives, a cost the host server's side would not pay).
 */
async function curl(url: string, headers: string[], times: number): Promise<CurlSample[]> {
  const args = [...CURL_FORMAT, ...headers.flatMap((header) => ["-H", header]), url];
  const { stdout } = await execa("bash", [
    "-c",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell's "the arguments from the second on"
    'for _ in $(seq "$1"); do curl "${@:2}" || exit 1; done',
    "curl-loop",
    String(times),
    ...args,
  ]);
  return stdout
    .trim()
    .split("\n")
    .map((line) => {
      const [speed = "", , total = ""] = line.trim().split(" ");
      return { bytesPerSecond: Number(speed), totalMs: Number(total) * 1000 };
    });
}

/**
 * Previews, side by side in one run: a small request through a preview (curl → createPaiHandler on loopback → a
 * kept-alive connection made inside the container's network namespace → the server in the sandbox) against the same request to the same server run on
 * the host, reached directly; a 100 MiB download through a preview against the host server behind a bare relay
 * (socat), as the egress rows are; and the round trip of a keystroke in the terminal (WebSocket → pty → echo).
 */
export async function benchPreviews(options: { rounds: number; megabytes: number }): Promise<BenchRow[]> {
  const host = await startByteServer();
  const relay = await startBareRelay(`127.0.0.1:${host.port}`).catch((error: unknown) => {
    host.stop();
    throw error;
  });
  const binding = dockerSandbox({
    image: await benchImage(),
    poolId: benchPoolId("previews"),
    pool: { min: 1, max: 1 },
  });
  const runtime = createAgentRuntime({
    pai: createPai({
      agents: { bench: defineAgent({ identity: z.object({ id: z.string() }), tools: { serve } }) },
    }),
    store: createMemoryThreadStore(),
    model: createScriptedModel({
      steps: [{ toolCalls: [{ toolName: "serve", input: {} }] }],
      fallback: { text: "ok" },
    }),
    capabilities: { sandbox: binding },
  });
  const identity = { id: "bench" };
  const handler = createPaiHandler({ runtime, authenticate: () => identity });
  const app = createServer(toNodeListener(handler));
  await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve));
  const appPort = (app.address() as AddressInfo).port;
  try {
    await fetch(`http://127.0.0.1:${appPort}/api/threads`); // previews are served here from now on
    const run = await (await runtime.run({ agentId: "bench", identity, message: "serve" })).done;
    const url = new URL(
      /http:\/\/[0-9a-f]+\.localhost:\d+\/\?pai_preview_token=[\w-]+/.exec(JSON.stringify(run.messages))![0],
    );
    const previewHeaders = [
      `Host: ${url.host}`,
      `Cookie: pai_preview=${url.searchParams.get("pai_preview_token")}`,
    ];
    const viaPreview = (path: string, times: number) =>
      curl(`http://127.0.0.1:${appPort}${path}`, previewHeaders, times);
    const onHost = (path: string, times: number) => curl(`http://127.0.0.1:${host.port}${path}`, [], times);
    const viaRelay = (path: string, times: number) =>
      curl(`http://127.0.0.1:${relay.port}${path}`, [], times);

    const small = { preview: [] as number[], direct: [] as number[] };
    const big = { preview: [] as number[], relay: [] as number[], direct: [] as number[] };
    const bigPath = `/bytes/${options.megabytes * MIB}`;
    await viaPreview("/bytes/100", 5);
    await onHost("/bytes/100", 5);
    for (let round = 0; round < options.rounds; round++) {
      const order = round % 2 === 0 ? (["preview", "direct"] as const) : (["direct", "preview"] as const);
      for (const side of order) {
        const samples = await (side === "preview" ? viaPreview : onHost)("/bytes/100", 20);
        small[side].push(...samples.map((sample) => sample.totalMs));
      }
      const downloads = [
        () => viaPreview(bigPath, 1).then((s) => big.preview.push(s[0]!.bytesPerSecond / MIB)),
        () => viaRelay(bigPath, 1).then((s) => big.relay.push(s[0]!.bytesPerSecond / MIB)),
        () => onHost(bigPath, 1).then((s) => big.direct.push(s[0]!.bytesPerSecond / MIB)),
      ];
      for (let i = 0; i < downloads.length; i++) await downloads[(round + i) % downloads.length]!();
    }
    const echo = await keystrokeEcho(appPort, run.threadId, options.rounds * 20);

    const subject = summarize(small.preview);
    const baseline = summarize(small.direct);
    const added = subject.p50 - baseline.p50;
    const previewRate = summarize(big.preview).p50;
    const relayRate = summarize(big.relay).p50;
    const directRate = summarize(big.direct).p50;
    return [
      {
        name: "preview: small request (100 B), curl via a preview vs the same server on the host, direct",
        subject,
        baseline,
        ratio: subject.p50 / baseline.p50,
        value: added,
        unit: "ms added (p50)",
        target: "≤ 2 ms added (p50)",
        met: added <= 2,
        note: `a new connection each (curl per request): handler on loopback, token check, a kept-alive connection into the container's namespace (pai-port-connect), the server in the container; ${small.preview.length} requests each`,
      },
      {
        name: `preview: ${options.megabytes} MiB download via a preview vs the host server behind a bare relay (socat)`,
        value: previewRate,
        unit: "MiB/s",
        ratio: previewRate / relayRate,
        target: "≥ 200 MiB/s",
        met: previewRate >= 200,
        note: `via the preview ${previewRate.toFixed(0)} MiB/s, via socat ${relayRate.toFixed(0)} MiB/s, direct ${directRate.toFixed(0)} MiB/s (p50 of ${big.preview.length} each, same rounds); ratio = preview / bare relay`,
      },
      {
        name: "terminal: keystroke echo round trip (WebSocket → pty in the sandbox → echo)",
        subject: echo,
        value: echo.p50,
        unit: "ms (p50)",
        note: `${options.rounds * 20} keystrokes, one at a time, each waited for on the screen`,
      },
    ];
  } finally {
    app.closeAllConnections();
    await new Promise<void>((resolve) => app.close(() => resolve()));
    await runtime.close();
    relay.stop();
    host.stop();
  }
}

/** The time from sending one character to the terminal until the pty's echo of it arrives, `times` times. */
async function keystrokeEcho(appPort: number, threadId: string, times: number) {
  const socket = new WebSocket(`ws://127.0.0.1:${appPort}/api/threads/${threadId}/terminal?cols=80&rows=24`);
  let output = "";
  let waiting: { text: string; resolve: () => void } | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.on("message", (data, isBinary) => {
      if (!isBinary) {
        if (JSON.parse(String(data)).type === "ready") resolve();
        return;
      }
      output += String(data);
      if (waiting && output.includes(waiting.text)) {
        const done = waiting.resolve;
        waiting = undefined;
        done();
      }
    });
  });
  try {
    await ready;
    // a shell line that is never run: each character is echoed by the line discipline
    await new Promise((resolve) => setTimeout(resolve, 300));
    const samples: number[] = [];
    for (let i = 0; i < times; i++) {
      const char = String.fromCharCode(97 + (i % 26));
      output = "";
      const echoed = new Promise<void>((resolve) => {
        waiting = { text: char, resolve };
      });
      const startedAt = performance.now();
      socket.send(Buffer.from(char));
      await echoed;
      samples.push(performance.now() - startedAt);
      if (i % 60 === 59) socket.send(Buffer.from("\x15")); // Ctrl-U: clear the line
    }
    return summarize(samples);
  } finally {
    socket.close();
  }
}
