// First use on an empty engine: an app's first `runtime.run` whose tool runs a command in a sandbox, on an engine
// that has never seen PAI (no image, no base), timed from `runtime.run` to the run's end (its one command done).
// Two paths, each side by side with the same work done by hand with the docker CLI on the same empty engine:
//  - the base pulled from a registry (the project's own on loopback, scripts/docker-registry, serving the main
//    engine's Debian base as <registry>/debian:bookworm-slim): PAI against `docker pull` + `docker build`;
//  - no registry: the debootstrap fallback (the rootfs tarball cached under /var/cache/pai-images, imported):
//    PAI against `docker import` + `docker build`.
// Every build installs the image's Debian packages from the mirror, so a round takes minutes. The engine is extra
// engine 4 of scripts/docker-engines-extra, emptied before every timed step.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { createAgentRuntime, createMemoryThreadStore } from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { type DockerEngine, debootstrapBase } from "@pai/pool";
import { dockerSandbox, sandboxImage } from "@pai/sandbox";
import { execa } from "execa";
import { ensureTestEngines } from "../tests/fixtures/test-engines.ts";
import { ensureTestRegistry } from "../tests/fixtures/test-registry.ts";
import { coderPai } from "../tests/sandbox/fixtures/run-script.ts";
import { type BenchRow, ratioRow } from "./bench-row.ts";
import { summarize } from "./stats.ts";

const main = "unix:///var/run/docker.sock";

/** The docker CLI on `host`, the classic builder (Debian's docker.io has no buildx). */
async function docker(host: string, ...args: string[]): Promise<string> {
  const { stdout } = await execa("docker", ["-H", host, ...args], {
    env: { DOCKER_BUILDKIT: "0" },
    timeout: 1_800_000,
  });
  return stdout.trim();
}

/** Every container and image of the engine removed: an engine that has never seen PAI. */
async function emptyEngine(host: string): Promise<void> {
  const words = (text: string) => text.split("\n").filter(Boolean);
  const containers = words(await docker(host, "ps", "-aq"));
  if (containers.length > 0) await docker(host, "rm", "-f", "-v", ...containers);
  // With no container left, every image is unused: prune removes them all, children before parents.
  await docker(host, "image", "prune", "--all", "--force");
  const left = await docker(host, "images", "-aq");
  if (left !== "") throw new Error(`engine ${host} still has images: ${left}`);
}

/** Milliseconds from `runtime.run` to the end of a run whose one tool call runs `echo ready` in a new sandbox. */
async function firstRun(engine: DockerEngine, baseImage: string | undefined) {
  const poolId = `bench-first-use-${randomBytes(3).toString("hex")}`;
  const runtime = createAgentRuntime({
    pai: coderPai,
    store: createMemoryThreadStore(),
    model: createScriptedModel({
      steps: [{ toolCalls: [{ toolName: "runScript", input: { command: "echo ready" } }] }, { text: "done" }],
    }),
    capabilities: {
      sandbox: dockerSandbox({
        engines: [engine],
        poolId,
        pool: { min: 0, max: 1, acquireTimeoutMs: 1_800_000 },
        ...(baseImage ? { baseImage } : {}),
        onImageProgress: () => {},
      }),
    },
  });
  try {
    const startedAt = performance.now();
    const run = await runtime.run({ agentId: "coder", identity: { userId: "bench" }, message: "go" });
    const { status } = await run.done;
    if (status !== "completed") throw new Error(`the first run ended ${status}`);
    return performance.now() - startedAt;
  } finally {
    await runtime.close();
  }
}

/** Milliseconds of `docker build` of the sandbox's build context on `base`, by hand. */
async function buildByHand(host: string, base: string): Promise<number> {
  const startedAt = performance.now();
  await docker(
    host,
    "build",
    "--network",
    "host",
    "--build-arg",
    `BASE_IMAGE=${base}`,
    "-t",
    "bench/sandbox",
    sandboxImage.contextDirectory,
  );
  return performance.now() - startedAt;
}

export async function benchFirstUse(options: { rounds: number }): Promise<BenchRow[]> {
  const [engine] = ensureTestEngines(4, { images: [] }).slice(3);
  if (!engine) throw new Error("extra engine 4 did not start");
  const host = `unix://${engine.socketPath}`;
  const registry = ensureTestRegistry();
  const registryBase = `${registry}/debian:bookworm-slim`;
  const debootstrap = await debootstrapBase();
  // The registry serves the main engine's Debian base under a registry name (built by `images/build` there).
  await docker(main, "tag", debootstrap.ref, registryBase);
  await docker(main, "push", registryBase);
  await docker(main, "rmi", registryBase);
  const tarball = join(
    process.env.PAI_IMAGES_CACHE || "/var/cache/pai-images",
    `base-${debootstrap.hash}.tar`,
  );

  const samples = {
    pull: [] as number[],
    pullByHand: [] as number[],
    fallback: [] as number[],
    fallbackByHand: [] as number[],
  };
  const timed = async (step: () => Promise<number>) => {
    await emptyEngine(host);
    return step();
  };
  for (let round = 0; round < options.rounds; round++) {
    samples.pull.push(await timed(() => firstRun(engine.engine, registryBase)));
    samples.pullByHand.push(
      await timed(async () => {
        const startedAt = performance.now();
        await docker(host, "pull", registryBase);
        return performance.now() - startedAt + (await buildByHand(host, registryBase));
      }),
    );
    samples.fallback.push(await timed(() => firstRun(engine.engine, undefined)));
    samples.fallbackByHand.push(
      await timed(async () => {
        const startedAt = performance.now();
        await execa("docker", ["-H", host, "import", tarball, debootstrap.ref]);
        return performance.now() - startedAt + (await buildByHand(host, debootstrap.ref));
      }),
    );
  }
  await emptyEngine(host);
  return [
    ratioRow({
      name: "first use on an empty engine, base pulled from a registry: runtime.run → first command done",
      subject: summarize(samples.pull),
      baseline: summarize(samples.pullByHand),
      note: "baseline: docker pull + docker build of the same context by hand",
    }),
    ratioRow({
      name: "first use on an empty engine, no registry (debootstrap rootfs): runtime.run → first command done",
      subject: summarize(samples.fallback),
      baseline: summarize(samples.fallbackByHand),
      note: "baseline: docker import of the cached rootfs + docker build by hand",
    }),
  ];
}
