import { dockerSandbox } from "@pai/sandbox";
import { execa } from "execa";
import { benchDriver, benchImage, benchPoolId } from "./bench-containers.ts";
import type { BenchRow } from "./bench-row.ts";
import { startBareRelay, startByteServer } from "./byte-relays.ts";
import { summarize } from "./stats.ts";

const MIB = 1024 * 1024;

/** MiB/s of `bytes` written into `cat > /dev/null` over one `docker exec` stream: the engine's own ceiling. */
async function execStreamRate(containerId: string, bytes: number): Promise<number> {
  const session = await benchDriver.execDuplex(containerId, { cmd: ["sh", "-c", "cat > /dev/null"] });
  const block = Buffer.alloc(MIB, 1);
  const started = performance.now();
  try {
    await new Promise<void>((resolve) => {
      let left = bytes;
      const pump = () => {
        while (left > 0) {
          left -= block.length;
          if (!session.stdin.write(block)) return void session.stdin.once("drain", pump);
        }
        session.stdin.end();
      };
      session.stdout.resume();
      session.stderr.resume();
      session.stdout.once("end", () => resolve());
      pump();
    });
  } finally {
    session.close();
  }
  return bytes / MIB / ((performance.now() - started) / 1000);
}

/** `curl` options that print what the benchmark reads: bytes per second and seconds to the first byte. */
const CURL_FORMAT = ["-sS", "-o", "/dev/null", "-w", "%{speed_download} %{time_starttransfer}\\n"];

function parse(lines: string): Array<{ bytesPerSecond: number; firstByteMs: number }> {
  return lines
    .trim()
    .split("\n")
    .map((line) => {
      const [speed = "", start = ""] = line.trim().split(" ");
      return { bytesPerSecond: Number(speed), firstByteMs: Number(start) * 1000 };
    });
}

/**
 * The egress proxy, side by side with the host in one run, against one loopback server (its own process): a
 * `megabytes` download by curl in a sandbox (through the proxy: agent listener → this process's egress relay, which
 * asks this process's policy and then splices the bytes, or the agent's exec stream when the engine is remote)
 * against the same curl download made directly by the host, and made by the host through a bare relay (socat): the
 * reference for what any proxy that copies the bytes once can reach here; and the time to the first byte of a
 * 1-byte answer on a fresh connection each time, the proxy's set-up cost.
 */
export async function benchEgressProxy(options: { rounds: number; megabytes: number }): Promise<BenchRow[]> {
  const server = await startByteServer();
  const target = `127.0.0.1:${server.port}`;
  const bareRelay = await startBareRelay(target).catch((error: unknown) => {
    server.stop();
    throw error;
  });
  /** Which way the connections came (the fast channel with an engine on this machine). */
  const channels = new Set<string>();
  const binding = dockerSandbox({
    image: await benchImage(),
    poolId: benchPoolId("egress"),
    pool: { min: 1, max: 1 },
    network: { allow: [target], maxBytes: Number.MAX_SAFE_INTEGER, maxConnections: 64 },
    onConnection: (event) => channels.add(event.channel),
  });
  const viaProxy: number[] = [];
  const execCeiling: number[] = [];
  const direct: number[] = [];
  const viaBareRelay: number[] = [];
  const setupProxy: number[] = [];
  const setupDirect: number[] = [];
  const big = `http://${target}/bytes/${options.megabytes * MIB}`;
  const tiny = `http://${target}/bytes/1`;
  const perRound = 20;
  try {
    const { facade, release, resourceId } = await binding.provision({
      leaseKey: "bench:egress",
      lifetime: "thread",
      signal: new AbortController().signal,
    });
    try {
      const inSandbox = async (url: string, times: number) => {
        const result = await facade.runCommand({
          command: `for i in $(seq ${times}); do curl ${CURL_FORMAT.map((arg) => `'${arg}'`).join(" ")} ${url} || exit 1; done`,
          timeoutMs: 600_000,
        });
        if (result.exitCode !== 0) throw new Error(`curl in the sandbox failed: ${result.stderr}`);
        return parse(result.stdout);
      };
      const onHost = async (url: string, times: number) => {
        let out = "";
        for (let i = 0; i < times; i++)
          out += (await execa("curl", [...CURL_FORMAT, url], { stripFinalNewline: false })).stdout;
        return parse(out);
      };
      const downloads: Array<{ run: () => Promise<Array<{ bytesPerSecond: number }>>; rates: number[] }> = [
        { run: () => inSandbox(big, 1), rates: viaProxy },
        { run: () => onHost(big, 1), rates: direct },
        {
          run: () => onHost(`http://127.0.0.1:${bareRelay.port}/bytes/${options.megabytes * MIB}`, 1),
          rates: viaBareRelay,
        },
      ];
      for (const download of downloads) await download.run();
      for (let round = 0; round < options.rounds; round++) {
        // each round starts with the next of the three, so none always runs first
        for (let i = 0; i < downloads.length; i++) {
          const download = downloads[(round + i) % downloads.length]!;
          download.rates.push(...(await download.run()).map((sample) => sample.bytesPerSecond / MIB));
        }
        execCeiling.push(await execStreamRate(resourceId, options.megabytes * MIB));
        const [first, second] = round % 2 === 0 ? [inSandbox, onHost] : [onHost, inSandbox];
        const c = await first(tiny, perRound);
        const d = await second(tiny, perRound);
        (first === inSandbox ? setupProxy : setupDirect).push(...c.map((sample) => sample.firstByteMs));
        (second === inSandbox ? setupProxy : setupDirect).push(...d.map((sample) => sample.firstByteMs));
      }
    } finally {
      await release();
    }
  } finally {
    await binding.close();
    bareRelay.stop();
    server.stop();
  }
  const proxyRate = summarize(viaProxy).p50;
  const directRate = summarize(direct).p50;
  const share = proxyRate / directRate;
  const bareRate = summarize(viaBareRelay).p50;
  const subject = summarize(setupProxy);
  const baseline = summarize(setupDirect);
  const overhead = subject.p50 - baseline.p50;
  return [
    {
      name: `egress proxy: ${options.megabytes} MiB download, sandbox curl via proxy vs host curl direct`,
      value: proxyRate,
      unit: "MiB/s",
      ratio: share,
      target: "≥ 50% of direct and ≥ 200 MiB/s",
      met: share >= 0.5 && proxyRate >= 200,
      note: `through the proxy ${proxyRate.toFixed(0)} MiB/s, direct ${directRate.toFixed(0)} MiB/s (p50 of ${viaProxy.length} each) over the ${[...channels].join(" and ")} channel; ratio = proxy / direct; the engine's bare docker exec stream (its ceiling) ${summarize(execCeiling).p50.toFixed(0)} MiB/s`,
    },
    {
      name: `egress proxy: ${options.megabytes} MiB download, sandbox curl via proxy vs host curl via a bare relay (socat)`,
      value: proxyRate,
      unit: "MiB/s",
      ratio: proxyRate / bareRate,
      note: `reference, no target: a bare relay on the host (socat -b 1 MiB: one process, no container, no policy, one copy in user space) moved ${bareRate.toFixed(0)} MiB/s, ${(bareRate / directRate).toFixed(2)} of direct, in the same rounds; ratio = proxy / bare relay`,
    },
    {
      name: "egress proxy: time to first byte on a new connection, via proxy vs direct",
      subject,
      baseline,
      ratio: subject.p50 / baseline.p50,
      value: overhead,
      unit: "ms added (p50)",
      target: "≤ 5 ms over direct (p50)",
      met: overhead <= 5,
    },
  ];
}
