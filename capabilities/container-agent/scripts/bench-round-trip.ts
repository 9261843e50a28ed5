/**
 * A quick measurement (not a test, not `npm run bench`): the round trip of `true` through the agent against a
 * host `child_process.spawn('true')`, side by side in one run, plus commands per second at concurrency 32.
 *
 *   node capabilities/container-agent/scripts/bench-round-trip.ts [--runs 1000] [--docker IMAGE]
 *
 * With `--docker IMAGE` it also starts a locked-down container (read-only root, no network, all capabilities
 * dropped but SETUID/SETGID/KILL, no-new-privileges; the agent for the engine's architecture (`docker info`)
 * copied before start into a root-owned volume at
 * /opt/pai; main process `pai-agent --idle`; then `docker exec -i ... /opt/pai/pai-agent` as root, running
 * commands as 1000:1000), measures the agent inside it and `docker exec <container> true`, and removes the
 * container at the end.
 */
import { execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { type AgentClient, createAgentClient, findPrebuiltBinary, nodeArchitecture } from "../src/index.ts";

const run = promisify(execFile);
const args = process.argv.slice(2);
const option = (name: string) => {
  const index = args.indexOf(name);
  return index >= 0 ? args[index + 1] : undefined;
};
const runs = Number(option("--runs") ?? 1000);
const image = option("--docker");

function percentiles(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
  return { p50: at(50), p95: at(95), p99: at(99), n: sorted.length };
}

function row(name: string, samples: number[]) {
  const { p50, p95, p99, n } = percentiles(samples);
  console.log(
    `${name.padEnd(44)} p50 ${p50.toFixed(3).padStart(8)} ms  p95 ${p95.toFixed(3).padStart(8)} ms  p99 ${p99.toFixed(3).padStart(8)} ms  (n=${n})`,
  );
  return p50;
}

async function time(n: number, once: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < Math.min(50, n); i++) await once(); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await once();
    samples.push(performance.now() - started);
  }
  return samples;
}

async function throughput(client: AgentClient, total: number, concurrency: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < total) await client.spawn({ argv: ["true"] }).wait();
    }),
  );
  return total / ((performance.now() - started) / 1000);
}

function hostSpawn(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("true", { stdio: "ignore" });
    child.once("error", reject);
    child.once("exit", () => resolve());
  });
}

async function agentOver(command: string, commandArgs: string[]) {
  const child = spawn(command, commandArgs, { stdio: ["pipe", "pipe", "inherit"] });
  const client = createAgentClient({ stream: { readable: child.stdout, writable: child.stdin } });
  await client.hello;
  return { client, child };
}

const binary = await findPrebuiltBinary({ program: "pai-agent", architecture: process.arch });
console.log(`agent: ${binary}; ${runs} sequential runs of \`true\` each, interleaved side by side\n`);

const host = await agentOver(binary, ["--user", "self"]);
// Interleave the two so that machine noise hits both alike.
const agentSamples: number[] = [];
const spawnSamples: number[] = [];
for (let round = 0; round < 10; round++) {
  agentSamples.push(...(await time(runs / 10, () => host.client.spawn({ argv: ["true"] }).wait())));
  spawnSamples.push(...(await time(runs / 10, hostSpawn)));
}
const agentP50 = row("agent on host: spawn `true` → exit", agentSamples);
const spawnP50 = row("host child_process.spawn('true') → exit", spawnSamples);
row("agent on host: ping", await time(runs, () => host.client.ping()));
console.log(`ratio agent / child_process.spawn (p50): ${(agentP50 / spawnP50).toFixed(2)}`);
console.log(
  `agent on host: ${(await throughput(host.client, 4000, 32)).toFixed(0)} commands/s (concurrency 32)\n`,
);
await host.client.close();

if (image) {
  const { stdout } = await run("docker", [
    "create",
    "--label=pai.bench-round-trip=1",
    "--network=none",
    "--read-only",
    "--cap-drop=ALL",
    "--cap-add=SETUID",
    "--cap-add=SETGID",
    "--cap-add=KILL",
    "--security-opt=no-new-privileges",
    "--user=0:0", // exec sessions get the capabilities above only when the container user is root
    "--init",
    "--pids-limit=256",
    "--memory=512m",
    "--mount=type=volume,dst=/opt/pai",
    "--mount=type=volume,dst=/workspace",
    "--mount=type=volume,dst=/tmp",
    "--entrypoint=/opt/pai/pai-agent",
    image,
    "--idle",
  ]);
  const container = stdout.trim();
  try {
    const machine = (await run("docker", ["info", "--format", "{{.Architecture}}"])).stdout.trim();
    const engineBinary = await findPrebuiltBinary({
      program: "pai-agent",
      architecture: nodeArchitecture(machine),
    });
    await run("docker", ["cp", engineBinary, `${container}:/opt/pai/pai-agent`]);
    await run("docker", ["start", container]);
    const inContainer = await agentOver("docker", ["exec", "-i", container, "/opt/pai/pai-agent"]);
    const hello = await inContainer.client.hello;
    console.log(
      `container ${container.slice(0, 12)}: agent ${hello.version}, uid ${hello.uid}, commands as ${hello.defaultUid}:${hello.defaultGid}`,
    );
    const id = await inContainer.client.spawn({ argv: ["id"] }).wait();
    console.log(`  id → ${new TextDecoder().decode(id.stdout).trim()}`);
    const p50 = row(
      "agent in container: spawn `true` → exit",
      await time(runs, () => inContainer.client.spawn({ argv: ["true"] }).wait()),
    );
    const execSamples = await time(Math.min(runs, 40), () =>
      run("docker", ["exec", "-u", "1000:1000", container, "true"]),
    );
    const execP50 = row("docker exec <container> true (CLI)", execSamples);
    console.log(`ratio docker exec / agent (p50): ${(execP50 / p50).toFixed(1)}`);
    console.log(
      `agent in container: ${(await throughput(inContainer.client, 4000, 32)).toFixed(0)} commands/s (concurrency 32)`,
    );
    await inContainer.client.close();
  } finally {
    await run("docker", ["rm", "-f", "-v", container]);
  }
}
