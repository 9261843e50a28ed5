import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import type {
  CapabilityBinding,
  CapabilityLifetime,
  LeaseRecord,
  ProvisionedResource,
  ProvisionRequest,
} from "@pai/core";
import { PaiError } from "@pai/core";
import {
  asCapabilityBinding,
  type ContainerDriver,
  type ContainerLimits,
  type ContainerSpec,
  createPooledBinding,
  type DockerEngine,
  dockerPoolEngines,
  type MultiEnginePoolEventMap,
  type MultiEnginePoolMetrics,
  type PoolEvents,
  type PooledBindingPoolOptions,
  type PooledBindingTuning,
  poolLabels,
} from "@pai/pool";
import tar from "tar-stream";
import { agentBinaryPath, buildAgentBinary } from "./agent/agent-binary.ts";
import { AGENT_DIRECTORY, AGENT_PATH, createAgentExecutor } from "./agent-executor.ts";
import { bindSandboxFacade } from "./bind-sandbox-facade.ts";
import type { CommandExecutor } from "./command-executor.ts";
import { createSandboxFacade } from "./create-sandbox-facade.ts";
import { resolveDefaultSandboxImage } from "./default-sandbox-image.ts";
import { createDockerExecExecutor } from "./docker-exec-executor.ts";
import type { SandboxFacade } from "./sandbox-facade.ts";

/** Options of {@link dockerSandbox}. */
export interface DockerSandboxOptions {
  /**
   * Image of the sandbox containers (it must exist locally; nothing is pulled).
   * @default the tag `images/build --print-tag sandbox` prints when that image exists, else `pai/sandbox:latest`
   */
  image?: string;
  /** The warm pool. */
  pool?: PooledBindingPoolOptions;
  /**
   * Per-container limits.
   * @default 512 MiB memory (no swap), 1 CPU, 256 pids, 1 GiB largest file
   */
  limits?: ContainerLimits;
  /**
   * `none` (only `lo`) or `host`. Never a bridge network.
   * @default "none"
   */
  network?: "none" | "host";
  /** Overrides the capability's default lifetime (`thread`). */
  lifetime?: CapabilityLifetime;
  /** Idle time after which `thread`/`user` sandboxes are removed. @default 30 minutes (the runtime's) */
  idleTtlMs?: number;
  /** The engine. @default createDockerDriver() (DOCKER_HOST or the default socket) */
  driver?: ContainerDriver;
  /**
   * Several engines (instead of `driver`): a socket, TCP with TLS, or SSH each. Each new sandbox goes to the
   * reachable engine with the most free capacity; `pool.min` and `pool.max` count per engine. The lease records
   * the engine (`meta.engine`), so a restarted process reattaches the sandbox there. When an engine stops
   * answering its sandboxes are lost: their calls fail with `CONTAINER_LOST` naming the engine.
   */
  engines?: readonly DockerEngine[];
  /**
   * The pool's `pai.pool` label: a restarted process finds its containers (to reattach or reap) by it. Two live
   * processes (or two bindings) on one engine must not share it, as each reaps what it does not own.
   * @default `pai-sandbox-<hash of the container spec>`
   */
  poolId?: string;
  /** Extra environment of every container (over `HOME=/workspace`). */
  env?: Readonly<Record<string, string>>;
  /** argv prefix that runs `runCommand`'s command line when it has no `args`. @default ["bash", "-c"] */
  shell?: readonly string[];
  /** Default per-stream output kept by `runCommand`. @default 1048576 */
  maxOutputBytes?: number;
  /**
   * How commands reach the container: the in-container agent (copied into `/opt/pai` before start and
   * connected while the pool warms the container; `docker exec` is its fallback), or `docker exec` only.
   * @default "agent"
   */
  executor?: "agent" | "docker-exec";
  /**
   * The pool's tuning under load (see `createContainerPool`): creates at once, backoff on failing creates,
   * trimming of idle containers above `min`.
   */
  poolTuning?: PooledBindingTuning;
}

/**
 * A provisioned sandbox. Besides the facade it offers `bind({ signal })`: the facade with every command and file
 * operation also aborted by that signal, so a runtime can hand each run a view its Stop reaches.
 */
export interface ProvisionedSandbox extends ProvisionedResource<SandboxFacade> {
  bind(scope: { signal: AbortSignal }): SandboxFacade;
}

/** The binding `dockerSandbox()` returns, with a view of its pool. */
export interface DockerSandboxBinding extends CapabilityBinding<SandboxFacade> {
  provision(request: ProvisionRequest): Promise<ProvisionedSandbox>;
  reattach(lease: LeaseRecord, signal: AbortSignal): Promise<ProvisionedSandbox | undefined>;
  /** The pool id, once started. */
  readonly poolId: string | undefined;
  /** The image, once started. */
  readonly image: string | undefined;
  /** The pool's metrics (summed, and per engine: status, free capacity, lost leases), once started. */
  metrics(): MultiEnginePoolMetrics | undefined;
  /** The pool's events: `engine` (an engine became reachable or unreachable), `lost` (a lease was lost), `error`. */
  readonly events: PoolEvents<MultiEnginePoolEventMap>;
}

const WORKSPACE = "/workspace";

/** A tar archive holding the agent binary as `pai-agent` (root, 0755), built once per process. */
let agentArchive: Promise<Buffer> | undefined;
/**
 * The named volume holding this agent build, filled once per engine: a container that is never started
 * mounts it writable, the binary goes in through the archive API, and the container is removed (the named
 * volume stays). Its name carries the binary's hash, so a new build gets a new volume.
 */
async function ensureAgentVolume(driver: ContainerDriver, image: string, archive: Buffer): Promise<void> {
  const name = agentVolumeName(archive);
  const { id } = await driver.create(
    { image, writablePaths: [], sharedVolumes: [{ name, target: AGENT_DIRECTORY, readOnly: false }] },
    { [poolLabels.managed]: "true", "pai.purpose": "agent-volume" },
  );
  try {
    const present = await driver
      .getArchive(id, AGENT_PATH)
      .then(async (stream) => {
        stream.resume();
        return true;
      })
      .catch(() => false);
    if (!present) await driver.putArchive(id, AGENT_DIRECTORY, archive);
  } finally {
    await driver.remove(id).catch(() => undefined);
  }
}

function agentVolumeName(archive: Buffer): string {
  return `pai-agent-${createHash("sha256").update(archive).digest("hex").slice(0, 12)}`;
}

function loadAgentArchive(): Promise<Buffer> {
  agentArchive ??= (async () => {
    const binary = await readFile(agentBinaryPath).catch(async () => readFile(await buildAgentBinary()));
    const pack = tar.pack();
    // A fixed mtime keeps the archive (and so the agent volume's name and the pool's spec hash) the same in
    // every process: a restarted runtime must recognise the containers it reattaches.
    pack.entry(
      { name: "pai-agent", mode: 0o755, uid: 0, gid: 0, size: binary.length, mtime: new Date(0) },
      binary,
    );
    pack.finalize();
    const chunks: Buffer[] = [];
    for await (const chunk of pack) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  })();
  agentArchive.catch(() => {
    agentArchive = undefined;
  });
  return agentArchive;
}

/**
 * The Docker binding of the `sandbox` capability: one fresh container per lease from a warm pool, destroyed
 * when the lease ends (never reused for another key), reattached after a restart from the lease the runtime
 * recorded, with containers nobody owns reaped.
 *
 * @example
 * const runtime = createAgentRuntime({
 *   pai,
 *   capabilities: {
 *     sandbox: dockerSandbox({ pool: { min: 1, max: 8, acquireTimeoutMs: 30_000 }, limits: { memoryBytes: 1 << 30 } }),
 *   },
 * });
 */
export function dockerSandbox(options: DockerSandboxOptions = {}): DockerSandboxBinding {
  const engines = dockerPoolEngines({ engines: options.engines, driver: options.driver });
  const useAgent = (options.executor ?? "agent") === "agent";
  const pooled = createPooledBinding<CommandExecutor, ProvisionedSandbox>({
    name: "sandbox",
    engines,
    ...(options.pool ? { pool: options.pool } : {}),
    ...(options.poolTuning ? { tuning: options.poolTuning } : {}),
    ...(options.poolId ? { poolId: options.poolId } : {}),
    closedError: () => new PaiError("CAPABILITY_UNAVAILABLE", "the sandbox binding is closed"),
    async preparePool() {
      const image = options.image ?? (await resolveDefaultSandboxImage());
      const agentVolume = useAgent ? agentVolumeName(await loadAgentArchive()) : undefined;
      const spec: ContainerSpec = {
        image,
        env: { HOME: WORKSPACE, ...(options.env ?? {}) },
        workingDir: WORKSPACE,
        network: options.network ?? "none",
        // The agent lives on a read-only volume shared by every container of this engine: copied onto the
        // engine once (putArchive, so remote engines work too) instead of into each container before start,
        // which cost ~100 ms of engine time per container. The sandbox user cannot write there.
        ...(agentVolume ? { sharedVolumes: [{ name: agentVolume, target: AGENT_DIRECTORY }] } : {}),
        ...(options.limits ? { limits: options.limits } : {}),
      };
      return {
        image,
        spec,
        teardown: ({ state }) => state?.close(),
        ...(agentVolume
          ? {
              setup: ({ containerId, driver, signal, adopted }) =>
                createAgentExecutor({
                  driver,
                  containerId,
                  agentPath: AGENT_PATH,
                  signal,
                  // A fresh container without its agent is retried by the pool; an adopted one (a thread's
                  // files) is kept on the docker exec fallback while the agent is restarted.
                  requireAgent: !adopted,
                }),
              // A warm container is healthy while its agent is connected: no Docker round trip on borrow.
              healthCheck: ({ state }) => (state as { connected?: boolean } | undefined)?.connected === true,
            }
          : { setup: ({ containerId, driver }) => createDockerExecExecutor({ driver, containerId }) }),
      };
    },
    async prepareEngine({ driver, image }) {
      if (useAgent) await ensureAgentVolume(driver, image, await loadAgentArchive());
    },
    resourceOf(lease, pool) {
      const facade = createSandboxFacade({
        executor: lease.state,
        driver: lease.driver,
        containerId: lease.containerId,
        image: pool.image,
        workspace: WORKSPACE,
        ...(options.shell ? { shell: options.shell } : {}),
        ...(options.maxOutputBytes !== undefined ? { maxOutputBytes: options.maxOutputBytes } : {}),
      });
      return {
        facade,
        resourceId: lease.containerId,
        meta: { poolId: pool.poolId, image: pool.image },
        release: () => lease.release(),
        bind: ({ signal }) => bindSandboxFacade(facade, signal),
      };
    },
  });
  return asCapabilityBinding(pooled, {
    capability: "sandbox",
    lifetime: options.lifetime,
    idleTtlMs: options.idleTtlMs,
  }) as DockerSandboxBinding;
}
