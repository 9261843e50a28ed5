import {
  AGENT_PATH,
  type AgentClient,
  type AgentDial,
  agentSupervisorSpec,
  agentVolumeMount,
  type ConnectionAudience,
  createConnectionAudience,
  createEgressProxy,
  type EgressChannel,
  type EgressConnectionEvent,
  type EgressNetworkOptions,
  type EgressProxy,
  egressEnvironment,
  parseEgressPolicy,
  prepareAgentDial,
  prepareAgentVolume,
  prepareEgressChannel,
  serveEgress,
  wantsEgressChannel,
} from "@pai/container-agent";
import type {
  CapabilityBinding,
  CapabilityConnectionEvent,
  CapabilityLifetime,
  LeaseRecord,
  ProvisionedResource,
  ProvisionRequest,
} from "@pai/core";
import {
  asCapabilityBinding,
  type ContainerDriver,
  type ContainerLimits,
  type ContainerSpec,
  createBindingImage,
  createPooledBinding,
  type DockerEngine,
  dockerPoolEngines,
  type ImageProgress,
  type MultiEnginePoolEventMap,
  type MultiEnginePoolMetrics,
  type PoolEvents,
  type PooledBindingPoolOptions,
  type PooledBindingTuning,
} from "@pai/pool";
import { createAgentExecutor } from "./agent-executor.ts";
import { bindSandboxFacade } from "./bind-sandbox-facade.ts";
import type { CommandExecutor } from "./command-executor.ts";
import { createSandboxFacade } from "./create-sandbox-facade.ts";
import { createDockerExecExecutor } from "./docker-exec-executor.ts";
import { SandboxError } from "./sandbox-error.ts";
import type { SandboxFacade, SandboxProcess } from "./sandbox-facade.ts";
import { sandboxImage, sandboxImageError } from "./sandbox-image.ts";

/** Options of {@link dockerSandbox}. */
export interface DockerSandboxOptions {
  /**
   * Image of the sandbox containers. A given image must be on every engine: it is never built or pulled (a
   * missing one fails with `IMAGE_UNAVAILABLE`).
   * @default PAI's sandbox image (`sandboxImage`: `pai/sandbox:<hash of its context and base>`), built from this
   * package's `image/` folder on each engine that lacks it, on the first use (about a minute; see `onImageProgress`)
   */
  image?: string;
  /**
   * The base PAI's sandbox image is built on when `image` is not given (a Debian bookworm, or an image with apt
   * that works like it). Pulled when the engine lacks it.
   * @default `PAI_BASE_IMAGE` when set; else `debian:bookworm-slim` when the engine has it or a registry gives it
   * (a pull that must start answering within 20 s); else a Debian rootfs made with debootstrap (`pai/base:<hash>`:
   * the engine's, or imported from /var/cache/pai-images, or made when this process is root and has debootstrap)
   */
  baseImage?: string;
  /**
   * Each line of progress while an engine's sandbox image is provided (pulling the base, each build step and its
   * output, waiting for another process building it), with the engine's id.
   * @default each line but a step's own output written to stderr (`writeImageProgress`)
   */
  onImageProgress?: (progress: ImageProgress) => void;
  /** The warm pool. */
  pool?: PooledBindingPoolOptions;
  /**
   * Per-container limits.
   * @default 512 MiB memory (no swap), 1 CPU, 256 pids, 1 GiB largest file
   */
  limits?: ContainerLimits;
  /**
   * What the sandbox may reach. The container never gets a network interface but `lo`:
   *
   * - `"none"`: nothing at all.
   * - `{ allow: [...] }`: an HTTP/HTTPS proxy on the container's `127.0.0.1:3128`, whose connections the agent
   *   relays to the host (through a unix socket of this process, or over its own connection: `channel`), where
   *   each connection is resolved and decided by address (see `EgressAllowEntry`:
   *   host names with `*.` wildcards, `host:port`, CIDRs; loopback, private, link-local, metadata and the host's
   *   own addresses only when an entry names that exact `host:port`). `HTTP(S)_PROXY`, `ALL_PROXY`, `NO_PROXY`,
   *   pip's and npm's settings point programs at it. `maxConnections` (32) and `maxBytes` (1 GiB) cap it.
   * - `"unsafe-host"`: the host's network namespace — every service on the host's loopback, every network the
   *   host reaches. Unsafe with a hostile program; for trusted code only.
   * @default "none"
   */
  network?: "none" | "unsafe-host" | EgressNetworkOptions;
  /**
   * Every connection a sandbox made through the egress proxy, when it ends (a refused one at once), with the
   * container it came from. The run whose command was running when it opened also gets it as a capability status
   * event (`status: "connection"`).
   */
  onConnection?: (event: SandboxConnectionEvent) => void;
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
   * The pool's `pai.pool` label: a restarted process finds its containers (to reattach or reap) by it. Runtime
   * processes with identical bindings (replicas of an app, two demos) share it safely: each container carries its
   * process's owner (`pai.owner`), and a runtime reaps only the containers of owners its store knows to be dead
   * (and this pool id's containers that carry no owner, from a binding warmed by hand without a runtime).
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
   * How commands reach the container: the in-container agent (on a read-only volume shared by every container of
   * the engine, connected while the pool warms the container; `docker exec` is its fallback), or `docker exec`
   * only (no egress proxy then).
   * @default "agent"
   */
  executor?: "agent" | "docker-exec";
  /**
   * The pool's tuning under load (see `createContainerPool`): creates at once, backoff on failing creates,
   * trimming of idle containers above `min`.
   */
  poolTuning?: PooledBindingTuning;
}

/** A connection through a sandbox's egress proxy, as `dockerSandbox({ onConnection })` sees it. */
export interface SandboxConnectionEvent extends EgressConnectionEvent {
  /** The sandbox's container. */
  containerId: string;
}

/**
 * A provisioned sandbox. Besides the facade it offers `bind({ signal, report })`: the facade with every command
 * and file operation also aborted by that signal, so a runtime can hand each run a view its Stop reaches; the
 * connections made while one of its operations runs are told to `report`.
 */
export interface ProvisionedSandbox extends ProvisionedResource<SandboxFacade> {
  bind(scope: { signal: AbortSignal; report?: (event: CapabilityConnectionEvent) => void }): SandboxFacade;
}

/** What the pool keeps per sandbox container. */
interface SandboxState {
  executor: CommandExecutor;
  /** Present when the binding allows egress. */
  proxy: EgressProxy | undefined;
  audience: ConnectionAudience;
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
/** How long a fresh container's agent may take to dial in before it is started with `docker exec` instead. */
const DIAL_TIMEOUT_MS = 10_000;

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
  const network = options.network ?? "none";
  if (network !== "none" && network !== "unsafe-host" && typeof network !== "object") {
    throw new SandboxError(
      "INVALID_ARGUMENT",
      'dockerSandbox: network is "none", "unsafe-host" or { allow: [...] }',
    );
  }
  const egress = typeof network === "object" ? network : undefined;
  const policy = egress ? parseEgressPolicy(egress.allow) : undefined;
  const fastEgress = egress ? wantsEgressChannel(egress) : false;
  if (policy && !useAgent) {
    throw new SandboxError("INVALID_ARGUMENT", "dockerSandbox: network.allow needs the agent executor");
  }

  const bindingImage = createBindingImage({
    recipe: sandboxImage,
    image: options.image,
    baseImage: options.baseImage,
    engines,
    onProgress: options.onImageProgress,
  });
  const ensureImage = (context: { engineId: string; driver: ContainerDriver; signal: AbortSignal }) =>
    bindingImage.ensure(context).catch((error: unknown) => {
      throw sandboxImageError(error);
    });

  /** Set by `preparePool` when the binding has one engine that shares this machine's filesystem (and `channel` is not `"tunnel"`). */
  let channel: EgressChannel | undefined;
  /** Set by `preparePool` likewise: fresh containers' agents dial this process instead of a `docker exec`. */
  let dial: AgentDial | undefined;

  async function setup(context: {
    driver: ContainerDriver;
    containerId: string;
    signal: AbortSignal | undefined;
    adopted: boolean;
    createEnv?: Readonly<Record<string, string>> | undefined;
  }): Promise<SandboxState> {
    const { driver, containerId, signal, createEnv } = context;
    const audience = createConnectionAudience();
    if (!useAgent) {
      return { executor: createDockerExecExecutor({ driver, containerId }), proxy: undefined, audience };
    }
    const proxy = policy
      ? createEgressProxy({
          policy,
          maxConnections: egress?.maxConnections,
          maxBytes: egress?.maxBytes,
          onConnection: (event) => options.onConnection?.({ ...event, containerId }),
        })
      : undefined;
    try {
      const executor = await createAgentExecutor({
        driver,
        containerId,
        agentPath: AGENT_PATH,
        signal,
        // A fresh container without its agent is retried by the pool; an adopted one (a thread's files) is kept
        // on the docker exec fallback while the agent is restarted.
        requireAgent: !context.adopted,
        // A container this process made (just now, or woken): its agent is its main process and dials in.
        dialled:
          dial && createEnv
            ? (connectSignal) =>
                (dial as AgentDial).connection(createEnv, {
                  timeoutMs: DIAL_TIMEOUT_MS,
                  signal: connectSignal,
                })
            : undefined,
        onConnect: proxy
          ? (client: AgentClient, connectSignal) =>
              serveEgress({ client, proxy, audience, channel, signal: connectSignal })
          : undefined,
      });
      return { executor, proxy, audience };
    } catch (error) {
      proxy?.close();
      throw error;
    }
  }

  const pooled = createPooledBinding<SandboxState, SandboxFacade, Parameters<ProvisionedSandbox["bind"]>[0]>({
    name: "sandbox",
    engines,
    ...(options.pool ? { pool: options.pool } : {}),
    ...(options.poolTuning ? { tuning: options.poolTuning } : {}),
    ...(options.poolId ? { poolId: options.poolId } : {}),
    // A conversation's files outlive a spec change: its next container inherits the old one's workspace.
    carryOver: [WORKSPACE],
    closedError: () => new SandboxError("CAPABILITY_UNAVAILABLE", "the sandbox binding is closed"),
    async preparePool({ signal }) {
      const image = await bindingImage.resolve(signal).catch((error: unknown) => {
        throw sandboxImageError(error);
      });
      // The agent lives on a read-only volume shared by every container of an engine (sandboxes and browsers),
      // filled once per engine (prepareEngine) through the archive API, so nothing is copied into each container.
      const agentVolume = useAgent ? await agentVolumeMount() : undefined;
      // The host socket directory, read-only, only on a single engine that shares this machine's filesystem (the
      // mount is part of the spec every engine's containers share; an engine reached over SSH never does):
      // egress connections reach this process's relay there without the agent's exec stream, and a fresh
      // container's agent dials in there without a docker exec.
      const [engine] = engines;
      // Drivers of the engine DOCKER_HOST names are one engine: one probe of the directory per process.
      const engineKey =
        options.engines === undefined && options.driver === undefined ? engine?.id : undefined;
      const local =
        engine && engines.length === 1 && !engine.remote
          ? { driver: engine.driver, image, engineKey }
          : undefined;
      // The probes below make containers of the image: it must be there first.
      if (engine && local) await ensureImage({ engineId: engine.id, driver: engine.driver, signal });
      channel = fastEgress && local ? await prepareEgressChannel(local) : undefined;
      // `channel: "tunnel"` asks for no host directory in the container at all.
      dial = useAgent && local && !(egress && !fastEgress) ? await prepareAgentDial(local) : undefined;
      const hostDirectory = channel?.mount ?? dial?.mount;
      const spec: ContainerSpec = {
        image,
        // The main process (the agent, or `sleep` without it) runs as root, which no program can signal: programs
        // run as SANDBOX_USER (the agent starts each one so, or `docker exec` does), so none can stop the sandbox.
        ...(useAgent ? agentSupervisorSpec : { user: agentSupervisorSpec.user }),
        env: { HOME: WORKSPACE, ...(policy ? egressEnvironment(policy) : {}), ...(options.env ?? {}) },
        workingDir: WORKSPACE,
        network: network === "unsafe-host" ? "host" : "none",
        ...(agentVolume ? { sharedVolumes: [agentVolume] } : {}),
        ...(dial ? { cmd: dial.cmd } : {}),
        ...(hostDirectory ? { hostDirectories: [hostDirectory] } : {}),
        ...(options.limits ? { limits: options.limits } : {}),
      };
      return {
        image,
        spec,
        setup: ({ containerId, driver, signal, adopted, createEnv }) =>
          setup({ driver, containerId, signal, adopted, createEnv }),
        ...(dial ? { containerEnv: { create: dial.env, renew: dial.renew } } : {}),
        teardown: async ({ state }) => {
          // The lease ended: its connections close with it.
          state?.proxy?.close();
          await state?.executor.close();
        },
        // A warm container is healthy while its agent is connected: no Docker round trip on borrow.
        ...(useAgent ? { healthCheck: ({ state }) => state?.executor.kind === "agent" } : {}),
      };
    },
    ensureImage,
    async prepareEngine({ driver, image, signal }) {
      if (useAgent) await prepareAgentVolume({ driver, image, signal });
    },
    facadeOf(lease, pool) {
      const { executor, audience } = lease.state;
      const facade = createSandboxFacade({
        executor,
        driver: lease.driver,
        containerId: lease.containerId,
        image: pool.image,
        workspace: WORKSPACE,
        ...(options.shell ? { shell: options.shell } : {}),
        ...(options.maxOutputBytes !== undefined ? { maxOutputBytes: options.maxOutputBytes } : {}),
      });
      return {
        facade,
        bind: ({ signal, report }) => {
          const bound = bindSandboxFacade(facade, signal);
          // A spawned process reports its connections until it ends.
          return report
            ? audience.during(bound, report, (method, value) =>
                method === "spawn" ? (value as SandboxProcess).wait() : undefined,
              )
            : bound;
        },
      };
    },
  });
  return asCapabilityBinding(pooled, {
    capability: "sandbox",
    lifetime: options.lifetime,
    idleTtlMs: options.idleTtlMs,
  }) as DockerSandboxBinding;
}
