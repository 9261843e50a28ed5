import { type ContainerLimits, containerSpecDefaults, createDockerDriver } from "@pai/pool";
import { GenericContainer, type StartedTestContainer, Wait } from "testcontainers";
import { createSandboxFacade } from "../create-sandbox-facade.ts";
import { createDockerExecExecutor } from "../docker-exec-executor.ts";
import type { SandboxFacade } from "../sandbox-facade.ts";
import { provideSandboxImage } from "../sandbox-image.ts";

/** Options of {@link createTestSandbox}. */
export interface TestSandboxOptions {
  /**
   * An image the engine has (nothing is pulled).
   * @default PAI's sandbox image, built on the engine when it lacks it (see `provideSandboxImage`)
   */
  image?: string;
  /** Limits, as `dockerSandbox`'s. @default 512 MiB, 1 CPU, 256 pids, 1 GiB largest file */
  limits?: ContainerLimits;
  /** @default "none" */
  network?: "none" | "host";
  /** Extra environment (over `HOME=/workspace`). */
  env?: Readonly<Record<string, string>>;
  /** How long start-up may take. @default 60000 */
  startupTimeoutMs?: number;
}

/** A sandbox for a test: the facade, its container id, and cleanup for `await using`. */
export interface TestSandbox extends SandboxFacade {
  readonly containerId: string;
  /** The testcontainers handle, for anything the facade does not cover. */
  readonly container: StartedTestContainer;
  /** Removes the container and its volumes. Idempotent. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

const WORKSPACE = "/workspace";

/**
 * `GenericContainer` with the sandbox hardening testcontainers has no builder method for: read-only root with
 * volumes for `/workspace` and `/tmp`, an init process, a pids limit, no swap, no logs.
 */
class HardenedContainer extends GenericContainer {
  constructor(image: string, limits: Required<ContainerLimits>) {
    super(image);
    Object.assign(this.hostConfig, {
      ReadonlyRootfs: true,
      Mounts: [
        { Type: "volume", Target: WORKSPACE },
        { Type: "volume", Target: "/tmp" },
      ],
      Init: true,
      Memory: limits.memoryBytes,
      MemorySwap: limits.memoryBytes,
      NanoCpus: limits.nanoCpus,
      PidsLimit: limits.pidsLimit,
      LogConfig: { Type: "none", Config: {} },
    });
  }
}

/**
 * Starts a sandbox container with testcontainers for your own tests — the same facade tools get from
 * `ctx.capabilities.sandbox`, with the same hardening (no network, all capabilities dropped,
 * `no-new-privileges`, commands as uid 1000 that cannot signal the container's root main process, limits,
 * read-only root). Readiness is an exec check (no ports: the network is
 * `none`). Ryuk is disabled unless `TESTCONTAINERS_RYUK_DISABLED` is set, so clean up with `await using`.
 *
 * @example
 * await using box = await createTestSandbox();
 * await box.writeFiles([{ path: "main.py", content: "print(6 * 7)" }]);
 * const { stdout } = await box.runCommand({ command: "python3 main.py" }); // "42\n"
 */
export async function createTestSandbox(options: TestSandboxOptions = {}): Promise<TestSandbox> {
  process.env.TESTCONTAINERS_RYUK_DISABLED ??= "true";
  process.env.TESTCONTAINERS_HOST_OVERRIDE ??= "localhost";
  const image = options.image ?? (await provideSandboxImage());
  const limits = { ...containerSpecDefaults.limits, ...(options.limits ?? {}) };
  const container = await new HardenedContainer(image, limits)
    .withCommand(["sleep", "infinity"])
    // The main process (`sleep`) as root, which no command can signal: commands run as SANDBOX_USER.
    .withUser("0:0")
    .withWorkingDir(WORKSPACE)
    .withEnvironment({ HOME: WORKSPACE, ...(options.env ?? {}) })
    .withNetworkMode(options.network ?? "none")
    .withDroppedCapabilities("ALL")
    .withSecurityOpt("no-new-privileges")
    .withUlimits({ fsize: { soft: limits.fsizeBytes, hard: limits.fsizeBytes } })
    .withLabels({ "pai.testing": "true" })
    .withWaitStrategy(Wait.forSuccessfulCommand(`test -d ${WORKSPACE}`))
    .withStartupTimeout(options.startupTimeoutMs ?? 60_000)
    .start();

  const containerId = container.getId();
  const driver = createDockerDriver();
  const executor = createDockerExecExecutor({ driver, containerId });
  const facade = createSandboxFacade({ executor, driver, containerId, image, workspace: WORKSPACE });
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      await executor.close().catch(() => undefined);
      await container.stop({ timeout: 0, remove: true, removeVolumes: true });
    })();
    return stopping;
  };
  return Object.assign(Object.create(null) as object, facade, {
    containerId,
    container,
    stop,
    [Symbol.asyncDispose]: stop,
  }) as TestSandbox;
}
