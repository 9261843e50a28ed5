// The sandbox image provided by the package itself, on an engine that lacks it: extra engine 3 of
// scripts/docker-engines-extra, which no other test uses and which this file empties of containers and images
// first. The pull path goes through a real registry on loopback (scripts/docker-registry): the main engine's
// debootstrap base is pushed there as <registry>/debian:bookworm-slim. Then two processes provision at once on the
// empty engine, and the `pai images` command line runs as a child process against it.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { debootstrapBase, type ImageProgress } from "@pai/pool";
import { dockerSandbox, resolveDefaultSandboxImage, SandboxError } from "@pai/sandbox";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureTestEngines, type TestEngine } from "../fixtures/test-engines.ts";
import { ensureTestRegistry } from "../fixtures/test-registry.ts";

const root = join(import.meta.dirname, "..", "..");
const cli = join(root, "capabilities", "sandbox", "src", "cli", "main.ts");
const provisionFixture = join(root, "tests", "fixtures", "provision-sandbox.ts");

let engine: TestEngine;
let host: string;
let registry: string;

/** The docker CLI on engine 3 (or, with `-H` given first, elsewhere). */
async function docker(...args: string[]): Promise<string> {
  const { stdout } = await execa("docker", args[0] === "-H" ? args : ["-H", host, ...args], {
    timeout: 120_000,
  });
  return stdout.trim();
}

const lines = (text: string) => text.split("\n").filter((line) => line !== "");

/** Removes every container and image of engine 3: an engine that has never seen PAI. */
async function emptyEngine(): Promise<void> {
  const containers = lines(await docker("ps", "-aq"));
  if (containers.length > 0) await docker("rm", "-f", "-v", ...containers);
  // Tagged images first (their untagged parents go with them), then whatever a build left dangling: `rmi` of every
  // id at once fails on a parent listed before its child.
  const tagged = lines(await docker("images", "--format", "{{.Repository}}:{{.Tag}}")).filter(
    (reference) => !reference.includes("<none>"),
  );
  if (tagged.length > 0) await docker("rmi", "-f", ...tagged);
  await docker("image", "prune", "-af");
  expect(await docker("images", "-aq")).toBe("");
}

const isStep = (progress: ImageProgress) =>
  progress.phase === "step" && /^Step \d+\/\d+ : /.test(progress.message);

const request = (leaseKey: string) => ({
  leaseKey,
  lifetime: "thread" as const,
  signal: AbortSignal.timeout(900_000),
});

beforeAll(async () => {
  // Engines 1 and 2 keep what they have; engine 3 gets no image copied.
  engine = ensureTestEngines(3, { images: [] })[2] as TestEngine;
  host = `unix://${engine.socketPath}`;
  registry = ensureTestRegistry();
  await emptyEngine();
}, 300_000);

afterAll(async () => {
  await docker("rm", "-f", "-v", ...lines(await docker("ps", "-aq"))).catch(() => undefined);
});

describe("the sandbox image, provided by the package", () => {
  it("names the fix when the base cannot be had or made, and when a given image is missing builds nothing", async () => {
    const imageIds = async () => [...new Set(lines(await docker("images", "-aq")))].sort();
    const before = await imageIds();
    const noBase = dockerSandbox({
      engines: [engine.engine],
      baseImage: `${registry}/pai-test/no-such-base:1`,
      pool: { min: 0, max: 1 },
      onImageProgress: () => {},
    });
    const noBaseError = await noBase.provision(request("thread:no-base")).catch((error: unknown) => error);
    await noBase.close();
    expect(SandboxError.hasCode(noBaseError, "IMAGE_UNAVAILABLE")).toBe(true);
    expect((noBaseError as Error).message).toMatch(
      /could not be pulled.*push it to a registry the engine reaches/,
    );

    const noImage = dockerSandbox({
      engines: [engine.engine],
      image: "pai/sandbox:000000000000",
      pool: { min: 0 },
    });
    const noImageError = await noImage.provision(request("thread:no-image")).catch((error: unknown) => error);
    await noImage.close();
    expect(SandboxError.hasCode(noImageError, "IMAGE_UNAVAILABLE")).toBe(true);
    expect((noImageError as Error).message).toMatch(/not on engine engine-3.*npx pai images build sandbox/);
    expect(await imageIds()).toEqual(before);

    // The default base on an engine that lacks it, no registry answering, no cached rootfs, and no debootstrap on
    // the PATH: the base cannot be made here, and the error says what would do.
    const cache = await mkdtemp(join(tmpdir(), "pai-images-cache-"));
    try {
      const cannot = await execa(
        process.execPath,
        [
          provisionFixture,
          engine.socketPath,
          engine.id,
          `test-image-no-debootstrap-${randomBytes(3).toString("hex")}`,
        ],
        { env: { PATH: "/usr/bin:/bin", PAI_IMAGES_CACHE: cache }, reject: false, timeout: 120_000 },
      );
      expect(cannot.exitCode).toBe(1);
      expect(cannot.stderr).toContain("SandboxError");
      expect(cannot.stderr).toContain("IMAGE_UNAVAILABLE");
      expect(cannot.stderr).toMatch(
        /debootstrap is not on the PATH.*Install debootstrap and run as root, make a registry reachable.*baseImage/,
      );
    } finally {
      await rm(cache, { recursive: true, force: true });
    }
    expect(await imageIds()).toEqual(before);
  }, 120_000);

  // The two builds (on the registry's base, on the debootstrap base) go on side by side: different images, no shared
  // lock, both mostly waiting on apt. The test that wants the engine's images unchanged runs before them.
  it.concurrent("pulls a given base from a registry, builds the image on an engine lacking it (each step told) and runs a command", async ({
    expect,
  }) => {
    const base = `${registry}/debian:bookworm-slim`;
    const { ref: mainBase } = await debootstrapBase();
    // The registry gets the main engine's debootstrap base under a registry name; the main engine keeps no copy of
    // that name, and engine 3 has nothing at all.
    await docker("-H", "unix:///var/run/docker.sock", "tag", mainBase, base);
    await docker("-H", "unix:///var/run/docker.sock", "push", base);
    await docker("-H", "unix:///var/run/docker.sock", "rmi", base);
    expect(await docker("images", "-q", base)).toBe("");

    const progress: ImageProgress[] = [];
    const binding = dockerSandbox({
      engines: [engine.engine],
      baseImage: base,
      poolId: `test-image-pull-${randomBytes(3).toString("hex")}`,
      pool: { min: 0, max: 1, acquireTimeoutMs: 60_000 },
      onImageProgress: (line) => progress.push(line),
    });
    try {
      const resource = await binding.provision(request("thread:pull"));
      const result = await resource.facade.runCommand({ command: "python3 -c 'print(6 * 7)'; id -u" });
      expect(result).toMatchObject({ exitCode: 0, stdout: "42\n1000\n" });
      await resource.release();

      const image = binding.image as string;
      expect(image).toMatch(/^pai\/sandbox:[0-9a-f]{12}$/);
      // The base came from the registry, with the same image id the main engine's has.
      expect(progress.some((line) => line.phase === "pull" && line.image === base)).toBe(true);
      expect(await docker("image", "inspect", "-f", "{{.Id}}", base)).toBe(
        await docker("-H", "unix:///var/run/docker.sock", "image", "inspect", "-f", "{{.Id}}", mainBase),
      );
      // The image was built here, every step told, all on engine 3.
      const steps = progress.filter(isStep).map((line) => line.message);
      expect(steps.length).toBeGreaterThanOrEqual(5);
      expect(steps.some((step) => step.includes("apt-get install"))).toBe(true);
      expect(progress.every((line) => line.engineId === engine.id)).toBe(true);
      expect(progress.at(-1)).toMatchObject({ phase: "done", image });
      expect(await docker("image", "inspect", "-f", '{{index .Config.Labels "pai.base"}}', image)).toBe(base);
    } finally {
      await binding.close();
    }
  }, 900_000);

  it.concurrent("builds once when two processes start at once on an engine lacking the image", async ({
    expect,
  }) => {
    const start = (n: number) =>
      execa(
        process.execPath,
        [
          provisionFixture,
          engine.socketPath,
          engine.id,
          `test-image-race-${n}-${randomBytes(3).toString("hex")}`,
        ],
        {
          timeout: 900_000,
        },
      );
    const outputs = await Promise.all([start(1), start(2)]);
    const processes = outputs.map(({ stdout }) => {
      const progress = lines(stdout)
        .filter((line) => line.startsWith("PROGRESS "))
        .map((line) => JSON.parse(line.slice("PROGRESS ".length)) as ImageProgress);
      const result = lines(stdout).find((line) => line.startsWith("RESULT "));
      return { progress, result: JSON.parse(result?.slice("RESULT ".length) ?? "null") };
    });
    for (const { result } of processes) expect(result).toMatchObject({ exitCode: 0, stdout: "ready\n" });
    const [one, two] = processes;
    const image = one?.result.image as string;
    expect(two?.result.image).toBe(image);
    // Engine 3 has no debian:bookworm-slim and no registry answers for it: the image is built on the debootstrap
    // base, imported from the host's cached rootfs.
    expect(image).toBe(await resolveDefaultSandboxImage({ driver: engine.driver }));
    // One process built it; the other waited for it and built nothing.
    const builders = processes.filter(({ progress }) => progress.some(isStep));
    expect(builders).toHaveLength(1);
    const waiter = processes.find((each) => !builders.includes(each));
    expect(waiter?.progress.some((line) => line.phase === "wait" && line.image === image)).toBe(true);
    // One image carries this content hash on the engine.
    const hash = image.split(":")[1] as string;
    const built = lines(await docker("images", "-q", "--filter", `label=pai.content-hash=${hash}`));
    expect(new Set(built).size).toBe(1);
  }, 900_000);
});

describe("pai images", () => {
  /** Runs the `pai` command line from source against engine 3. */
  const pai = (...args: string[]) =>
    execa(process.execPath, [cli, "images", ...args], {
      env: { DOCKER_HOST: host },
      reject: false,
      timeout: 600_000,
    });

  it("build prints the current tags, and builds nothing the engine has", async () => {
    const current = await resolveDefaultSandboxImage({ driver: engine.driver });
    const printed = await pai("build", "--print-tag", "sandbox", "base");
    expect(printed.exitCode).toBe(0);
    expect(lines(printed.stdout)).toEqual([current, (await debootstrapBase()).ref]);

    const built = await pai("build");
    expect(built).toMatchObject({ exitCode: 0, stdout: current });
    expect(built.stderr).toContain(`${current} up to date`);
    expect(await docker("image", "inspect", "-f", "{{.Id}}", "pai/sandbox:latest")).toBe(
      await docker("image", "inspect", "-f", "{{.Id}}", current),
    );

    const wrong = await pai("build", "nonsense");
    expect(wrong.exitCode).toBe(2);
    expect(wrong.stderr).toContain("unknown image nonsense");
  }, 120_000);

  it("pai doctor tells which images are there and current, and how to build the others", async () => {
    const doctor = await execa(process.execPath, [cli, "doctor"], {
      env: { DOCKER_HOST: host },
      reject: false,
      timeout: 120_000,
    });
    const current = await resolveDefaultSandboxImage({ driver: engine.driver });
    expect(doctor.stdout).toContain(`OK sandbox image: ${current} is on the engine, current`);
    // Engine 3 never had a browser image.
    expect(doctor.stdout).toMatch(
      /^FAIL browser image: pai\/browser:[0-9a-f]{12}, the current browser image, is not on the engine: .*Fix: build it now with `npx pai images build browser`$/m,
    );
    expect(doctor.exitCode).toBe(1);
  }, 120_000);

  it("list marks the current image and the ones in use; prune removes the others", async () => {
    const current = await resolveDefaultSandboxImage({ driver: engine.driver });
    // The image the pull test built on the registry base is not current: nothing would run it now.
    const stale = lines(
      await docker("images", "--filter", "label=pai.image=sandbox", "--format", "{{.Repository}}:{{.Tag}}"),
    ).filter((tag) => tag !== current && tag !== "pai/sandbox:latest");
    expect(stale).toHaveLength(1);
    const [old] = stale as [string];
    const container = await docker("create", "--network", "none", old, "true");

    const rowOf = (listing: string, tag: string) =>
      lines(listing).find((line) =>
        line
          .split(/\s{2,}/)[0]
          ?.split(", ")
          .includes(tag),
      );
    const listed = await pai("list");
    expect(listed.exitCode).toBe(0);
    expect(rowOf(listed.stdout, current)).toMatch(/\syes\s+no$/);
    expect(rowOf(listed.stdout, old)).toMatch(/\sno\s+yes$/);

    // In use: kept. (Its base, the registry's copy of the debootstrap base, is neither current nor in use: its tag
    // goes, the image stays under the one built on it.)
    const kept = await pai("prune");
    expect(kept.exitCode).toBe(0);
    expect(kept.stdout).not.toContain(old);
    expect(await docker("images", "-q", old)).not.toBe("");

    await docker("rm", "-f", container);
    const pruned = await pai("prune");
    expect(pruned.exitCode).toBe(0);
    expect(lines(pruned.stdout)).toContain(`deleted ${old}`);
    expect(await docker("images", "-q", old)).toBe("");
    // What is current stays.
    expect(await docker("images", "-q", current)).not.toBe("");
    expect(rowOf((await pai("list")).stdout, current)).toMatch(/\syes\s+no$/);
  }, 120_000);
});
