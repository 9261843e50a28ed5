import {
  AGENT_PATH,
  type AgentDial,
  agentSupervisorSpec,
  type EgressConnectionEvent,
  type EgressNetworkOptions,
  egressEnvironment,
  prepareAgentDial,
} from "@pai/container-agent";
import type { CapabilityLifetime } from "@pai/core";
import {
  type ContainerConnectContext,
  createDockerBinding,
  type DockerPrepareContext,
  type PooledBinding,
  type PooledBindingPoolOptions,
  type PooledBindingTuning,
  type PooledResource,
  type PreparedContainers,
  parseBindingNetwork,
} from "@pai/docker-binding";
import type { ContainerDriver, ContainerLimits, ContainerSpec, DockerEngine, ImageProgress } from "@pai/pool";
import { createAgentExecutor } from "./agent-executor.ts";
import { stopSandboxProcesses } from "./checkpoints/stop-sandbox-processes.ts";
import { createWorkspaceCheckpoints } from "./checkpoints/workspace-checkpoints.ts";
import type { CodeLanguage } from "./code-interpreter/code-context.ts";
import { type PrewarmedCodeContexts, prewarmCodeContexts } from "./code-interpreter/prewarm-code-contexts.ts";
import type { CommandExecutor } from "./command-executor.ts";
import { createSandboxFacade } from "./create-sandbox-facade.ts";
import { createDockerExecExecutor } from "./docker-exec-executor.ts";
import { sandboxCalls } from "./sandbox-calls.ts";
import { createSandboxCommands } from "./sandbox-commands.ts";
import { SandboxError } from "./sandbox-error.ts";
import type { SandboxFacade } from "./sandbox-facade.ts";
import { sandboxImage, sandboxImageError } from "./sandbox-image.ts";
import { checkSandboxPort } from "./sandbox-port.ts";

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
   * How `openPort` (and so a preview) reaches a server in a container of an engine on this machine: `true` connects
   * from this machine inside the container's network namespace (the `pai-port-connect` helper, which needs root to
   * enter it, hands the socket over), so no process relays the bytes; `false` has the container's agent relay each
   * connection. Where the namespace cannot be entered (another machine's engine, not root, a rootless engine) the
   * agent relays them either way.
   * @default true
   */
  directPorts?: boolean;
  /** Code contexts (`runCode`) of the sandboxes. */
  codeInterpreter?: SandboxCodeInterpreterOptions;
  /**
   * The pool's tuning under load (see `createContainerPool`): creates at once, backoff on failing creates,
   * trimming of idle containers above `min`.
   */
  poolTuning?: PooledBindingTuning;
}

/** Options of `dockerSandbox({ codeInterpreter })`. */
export interface SandboxCodeInterpreterOptions {
  /**
   * Languages whose default context the pool starts in every container it creates, before the container counts as
   * warm: the first `runCode` of a new conversation finds its interpreter running instead of starting it (IPython
   * takes about a second and a half of CPU). Each costs the container's memory for as long as it waits in the pool
   * (see `npm run bench`); a woken or reattached container starts its contexts on first use as before.
   * @default [] (every context starts on first use)
   * @example
   * dockerSandbox({ codeInterpreter: { prewarm: ["python"] } })
   */
  prewarm?: readonly CodeLanguage[];
}

/** A connection through a sandbox's egress proxy, as `dockerSandbox({ onConnection })` sees it. */
export interface SandboxConnectionEvent extends EgressConnectionEvent {
  /** The sandbox's container. */
  containerId: string;
}

/**
 * A provisioned sandbox. Besides the facade it offers `bind({ signal, report, previews })`: the facade with every
 * command and file operation also aborted by that signal, so a runtime can hand each run a view its Stop reaches;
 * the connections made while one of its operations runs (a spawned process's, until it ends) are told to `report`,
 * and `exposePort` opens its previews through `previews`. `openPort(port, signal)` connects to a server listening on
 * the container's loopback through its agent (the container keeps no network): on an engine of this machine the agent
 * relays it to this process's dial socket (a `net.Socket`, none of its bytes in the agent's frames), elsewhere it is
 * carried in the agent's frames; both half-close and close alike. `INVALID_ARGUMENT` for a
 * port outside 1–65535, the agent's `SANDBOX_PORT_CLOSED` (a `ContainerAgentError`) when nothing listens there,
 * `AGENT_REQUIRED` on the `docker-exec` executor.
 */
export interface ProvisionedSandbox extends PooledResource<SandboxFacade> {}

/**
 * The binding `dockerSandbox()` returns, with a view of its pool: `poolId`, `image` and `metrics()` once started,
 * and the pool's `events` (`engine`: an engine became reachable or unreachable, `lost`: a lease was lost, `error`).
 */
export interface DockerSandboxBinding extends PooledBinding<SandboxFacade> {}

const WORKSPACE = "/workspace";
/** How long a fresh container's agent may take to dial in before it is started with `docker exec` instead. */
const DIAL_TIMEOUT_MS = 10_000;

/** How the binding's containers run commands: the agent, or `docker exec` only. */
interface SandboxCommands {
  useAgent: boolean;
  /** Fresh containers' agents dial this process instead of a `docker exec` (set on the first start). */
  dial: AgentDial | undefined;
}

/** Connects to a started sandbox container: its agent (dialled in, or started with `docker exec`), or `docker exec`. */
function connectExecutor(
  commands: SandboxCommands,
  context: ContainerConnectContext,
): Promise<CommandExecutor> {
  const { driver, containerId, signal, createEnv } = context;
  if (!commands.useAgent) return Promise.resolve(createDockerExecExecutor({ driver, containerId }));
  const { dial } = commands;
  return createAgentExecutor({
    driver,
    containerId,
    agentPath: AGENT_PATH,
    signal,
    // A fresh container without its agent is retried by the pool; an adopted one (a thread's files) is kept on
    // the docker exec fallback while the agent is restarted.
    requireAgent: !context.adopted,
    // A container this process made (just now, or woken): its agent is its main process and dials in.
    dialled:
      dial && createEnv
        ? (connectSignal) => dial.connection(createEnv, { timeoutMs: DIAL_TIMEOUT_MS, signal: connectSignal })
        : undefined,
    // The same container mounts the dial socket: its port connections come back through it, not in frames.
    dialBack: dial && createEnv ? () => dial.dialBack() : undefined,
    onConnect: context.onAgent,
  });
}

/**
 * Connects to a started sandbox container (see `connectExecutor`); in a container this process just created, starts
 * the default code contexts of `prewarm` over that connection, kept for the facade made over it.
 */
async function connectSandbox(
  commands: SandboxCommands,
  context: ContainerConnectContext,
  prewarm: readonly CodeLanguage[],
  prewarmed: WeakMap<CommandExecutor, PrewarmedCodeContexts>,
): Promise<CommandExecutor> {
  const executor = await connectExecutor(commands, context);
  if (prewarm.length === 0 || context.adopted) return executor;
  const { spawn, runCommand } = createSandboxCommands({
    executor,
    workspace: WORKSPACE,
    shell: ["bash", "-c"],
    maxOutputBytes: 64 * 1024,
  });
  prewarmed.set(
    executor,
    await prewarmCodeContexts({
      spawn,
      runCommand,
      languages: prewarm,
      workspace: WORKSPACE,
      signal: context.signal,
    }),
  );
  return executor;
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
  const commands: SandboxCommands = { useAgent: (options.executor ?? "agent") === "agent", dial: undefined };
  const prewarm = options.codeInterpreter?.prewarm ?? [];
  /** The contexts prewarmed in each container, by its connection. */
  const prewarmed = new WeakMap<CommandExecutor, PrewarmedCodeContexts>();
  const network = parseBindingNetwork(
    options.network ?? "none",
    () =>
      new SandboxError(
        "INVALID_ARGUMENT",
        'dockerSandbox: network is "none", "unsafe-host" or { allow: [...] }',
      ),
  );
  const { egress, policy } = network;
  if (policy && !commands.useAgent) {
    throw new SandboxError("INVALID_ARGUMENT", "dockerSandbox: network.allow needs the agent executor");
  }

  async function prepare(
    context: DockerPrepareContext,
  ): Promise<PreparedContainers<CommandExecutor, SandboxFacade>> {
    const { image, agentVolume, channel, local } = context;
    // `channel: "tunnel"` asks for no host directory in the container at all.
    commands.dial =
      commands.useAgent && local && !(egress && !network.fastEgress)
        ? await prepareAgentDial(local)
        : undefined;
    const { dial } = commands;
    const hostDirectory = channel?.mount ?? dial?.mount;
    const spec: ContainerSpec = {
      image,
      // The main process (the agent, or `sleep` without it) runs as root, which no program can signal: programs
      // run as SANDBOX_USER (the agent starts each one so, or `docker exec` does), so none can stop the sandbox.
      ...(commands.useAgent ? agentSupervisorSpec : { user: agentSupervisorSpec.user }),
      env: { HOME: WORKSPACE, ...(policy ? egressEnvironment(policy) : {}), ...(options.env ?? {}) },
      workingDir: WORKSPACE,
      network: network.mode,
      ...(agentVolume ? { sharedVolumes: [agentVolume] } : {}),
      ...(dial ? { cmd: dial.cmd } : {}),
      ...(hostDirectory ? { hostDirectories: [hostDirectory] } : {}),
      ...(options.limits ? { limits: options.limits } : {}),
    };
    return {
      spec,
      ...(dial ? { containerEnv: { create: dial.env, renew: dial.renew } } : {}),
      connect: (container) => connectSandbox(commands, container, prewarm, prewarmed),
      // A warm container is healthy while its agent is connected: no Docker round trip on borrow.
      ...(commands.useAgent ? { healthy: (executor: CommandExecutor) => executor.kind === "agent" } : {}),
      // Previews reach a server in the sandbox over the agent's connection: the container keeps no network.
      openPort: async ({ connection }, port, signal) =>
        connection.openPort(checkSandboxPort(port), { signal }),
      // Checkpoints of /workspace, taken and restored by a program run as the sandbox user over the same connection;
      // a rewind stops the sandbox user's programs first.
      checkpoints: ({ connection }) => ({
        ...createWorkspaceCheckpoints({ executor: connection, workspace: WORKSPACE }),
        stopProcesses: ({ signal }) => stopSandboxProcesses({ executor: connection, signal }),
      }),
      facade: ({ connection, driver, containerId }) =>
        createSandboxFacade({
          executor: connection,
          driver,
          containerId,
          image,
          workspace: WORKSPACE,
          prewarmed: prewarmed.get(connection),
          ...(options.shell ? { shell: options.shell } : {}),
          ...(options.maxOutputBytes !== undefined ? { maxOutputBytes: options.maxOutputBytes } : {}),
        }),
    };
  }

  return createDockerBinding<CommandExecutor, SandboxFacade>({
    capability: "sandbox",
    lifetime: options.lifetime,
    idleTtlMs: options.idleTtlMs,
    driver: options.driver,
    engines: options.engines,
    pool: options.pool,
    tuning: options.poolTuning,
    poolId: options.poolId,
    // A conversation's files outlive a spec change: its next container inherits the old one's workspace.
    carryOver: [WORKSPACE],
    image: {
      recipe: sandboxImage,
      image: options.image,
      baseImage: options.baseImage,
      onProgress: options.onImageProgress,
      mapError: sandboxImageError,
    },
    network,
    onConnection: options.onConnection,
    agent: commands.useAgent,
    directPorts: options.directPorts,
    calls: sandboxCalls,
    closedError: () => new SandboxError("CAPABILITY_UNAVAILABLE", "the sandbox binding is closed"),
    prepare,
  });
}
