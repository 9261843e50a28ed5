import type { Duplex } from "node:stream";
import {
  type AgentClient,
  type AgentVolumeMount,
  agentVolumeMount,
  type ConnectionAudience,
  createConnectionAudience,
  createEgressProxy,
  type EgressChannel,
  type EgressConnectionEvent,
  type EgressProxy,
  prepareAgentVolume,
  prepareEgressChannel,
  serveEgress,
} from "@pai/container-agent";
import type { CapabilityLifetime, ResourceCheckpoints } from "@pai/core";
import {
  type ContainerDriver,
  type ContainerPoolOptions,
  type ContainerSpec,
  createBindingImage,
  type DockerEngine,
  dockerPoolEngines,
  type ImageProgress,
  type ImageRecipe,
} from "@pai/pool";
import type { FacadeCalls } from "./bind-facade.ts";
import type { BindingNetwork } from "./binding-network.ts";
import { type ContainerLoopback, createContainerLoopback } from "./container-loopback.ts";
import type { PooledBindingPoolOptions, PooledBindingTuning } from "./multi-engine-pool-settings.ts";
import { createPooledBinding, type PooledBinding, type PreparedPool } from "./pooled-binding.ts";

/** What a capability keeps per container: the connection its facade runs on (an agent executor, a Chromium). */
export interface ContainerConnection {
  /** Closes it; the container is about to be removed or hibernated. */
  close(): Promise<void>;
}

/** What a capability's `connect` gets for each container, after it started (a create, a wake, an adoption). */
export interface ContainerConnectContext {
  driver: ContainerDriver;
  containerId: string;
  /** Aborts when the pool closes (or the call that wakes the container gives up). */
  signal: AbortSignal | undefined;
  /** True for a container this process did not just create (adopted after a restart, or woken). */
  adopted: boolean;
  /** What `containerEnv.create` gave the container, when this process created it. */
  createEnv?: Readonly<Record<string, string>> | undefined;
  /**
   * Serves the container's egress proxy over the agent's connection, when the binding allows egress: call it on
   * every (re)connection of the container's agent (e.g. as `createAgentExecutor`'s `onConnect`).
   */
  onAgent: ((client: AgentClient, signal: AbortSignal | undefined) => Promise<unknown>) | undefined;
}

/** What a capability's `connect` made for a container, and what the binding keeps beside it. */
export interface ContainerState<CONNECTION extends ContainerConnection> {
  connection: CONNECTION;
  /** The container's egress proxy, when the binding allows egress. */
  proxy: EgressProxy | undefined;
  /** The runs told of the container's connections. */
  audience: ConnectionAudience;
  /** Connections to its ports straight from this machine, on an engine that shares it. */
  loopback: ContainerLoopback | undefined;
}

/** What a capability's `prepare` gets, once, on the binding's first start. */
export interface DockerPrepareContext {
  /** The image every engine runs. */
  image: string;
  /** The agent's volume (mount it read-only: `sharedVolumes`), when the binding's containers run the agent. */
  agentVolume: AgentVolumeMount | undefined;
  /** The fast egress channel (mount its `mount` read-only: `hostDirectories`), when there is one. */
  channel: EgressChannel | undefined;
  /**
   * The binding's one engine, when it shares this machine's filesystem and is the only one (the mount of a host
   * directory is part of the spec every engine's containers share): what a probe for that directory needs, the
   * image already on it.
   */
  local: { driver: ContainerDriver; image: string; engineKey: string | undefined } | undefined;
  /** Aborts when the binding closes. */
  signal: AbortSignal;
}

/** What a capability's `prepare` answers: the containers' spec, how to connect to one, and the facade over it. */
export interface PreparedContainers<CONNECTION extends ContainerConnection, FACADE>
  extends Partial<Pick<ContainerPoolOptions<ContainerState<CONNECTION>>, "containerEnv">> {
  spec: ContainerSpec;
  /** Connects to a started container; it counts as warm once this resolves. A throw fails its creation. */
  connect(context: ContainerConnectContext): Promise<CONNECTION>;
  /**
   * Whether a warm container's connection is still good, checked on borrow without a Docker round trip. Without
   * it the pool asks the engine.
   */
  healthy?: ((connection: CONNECTION) => boolean) | undefined;
  /**
   * A new connection to `port` on a connected container's loopback (see `ProvisionedResource.openPort`). Without it
   * the binding's resources have no `openPort`.
   */
  openPort?:
    | ((
        context: { connection: CONNECTION; containerId: string },
        port: number,
        signal: AbortSignal,
      ) => Promise<Duplex>)
    | undefined;
  /**
   * Checkpoints of a connected container's state (see `ProvisionedResource.checkpoints`). Without it the binding's
   * resources have no `checkpoints`.
   */
  checkpoints?:
    | ((context: { connection: CONNECTION; containerId: string }) => ResourceCheckpoints)
    | undefined;
  /** The facade over a connected container. */
  facade(context: {
    connection: CONNECTION;
    proxy: EgressProxy | undefined;
    driver: ContainerDriver;
    containerId: string;
    image: string;
  }): FACADE;
}

/** Options of {@link createDockerBinding}. */
export interface DockerBindingOptions<CONNECTION extends ContainerConnection, FACADE> {
  /** The capability's name (`sandbox`): prefixes lease keys, names the binding in errors and the default pool id. */
  capability: string;
  lifetime?: CapabilityLifetime | undefined;
  idleTtlMs?: number | undefined;
  /** The engine. @default createDockerDriver() (DOCKER_HOST or the default socket) */
  driver?: ContainerDriver | undefined;
  /** Several engines (instead of `driver`). */
  engines?: readonly DockerEngine[] | undefined;
  pool?: PooledBindingPoolOptions | undefined;
  tuning?: PooledBindingTuning | undefined;
  poolId?: string | undefined;
  /** See `PooledBindingOptions.carryOver`. */
  carryOver?: readonly string[] | undefined;
  /** See `PooledBindingOptions.carryOverStopped`. */
  carryOverStopped?: boolean | undefined;
  /** The image: a given one, or PAI's built from `recipe` on each engine that lacks it (see `createBindingImage`). */
  image: {
    recipe: ImageRecipe;
    image?: string | undefined;
    baseImage?: string | undefined;
    onProgress?: ((progress: ImageProgress) => void) | undefined;
    /** The capability's own error for a failure to provide the image. */
    mapError(error: unknown): unknown;
  };
  network: BindingNetwork;
  /**
   * Whether `openPort` connects from this machine inside the container's network namespace, where the engine shares
   * this machine and the namespace can be entered (see `createContainerLoopback`), before the capability's own path.
   * @default true
   */
  directPorts?: boolean | undefined;
  /** Every connection a container made through its egress proxy, when it ends, with the container. */
  onConnection?: ((event: EgressConnectionEvent & { containerId: string }) => void) | undefined;
  /** Whether the containers run PAI's agent from the engine's agent volume (filled once per engine). @default true */
  agent?: boolean | undefined;
  /** The facade's members (see `bindFacade`). */
  calls: FacadeCalls<FACADE>;
  /** The error for calls on a closed binding. */
  closedError(): Error;
  /**
   * The capability's one hook, called once, on the first start, after the image is resolved (and on the local
   * engine) and the agent's volume and the egress channel are known: the containers' spec and how to connect to one.
   */
  prepare(context: DockerPrepareContext): Promise<PreparedContainers<CONNECTION, FACADE>>;
}

/**
 * A Docker capability binding (`dockerSandbox`, `dockerBrowser`): a pooled binding whose containers may run PAI's
 * container agent (its volume filled once per engine) with an egress proxy served over the agent's connection, on
 * an image PAI provides on each engine. The capability says once (`prepare`) what its containers run and how to
 * connect to one; the rest is this binding's.
 */
export function createDockerBinding<CONNECTION extends ContainerConnection, FACADE extends object>(
  options: DockerBindingOptions<CONNECTION, FACADE>,
): PooledBinding<FACADE> {
  const engines = dockerPoolEngines({ engines: options.engines, driver: options.driver });
  const { network, image: imageOptions } = options;
  const useAgent = options.agent ?? true;
  const bindingImage = createBindingImage({
    recipe: imageOptions.recipe,
    image: imageOptions.image,
    baseImage: imageOptions.baseImage,
    engines,
    onProgress: imageOptions.onProgress,
  });
  const ensureImage = (context: { engineId: string; driver: ContainerDriver; signal: AbortSignal }) =>
    bindingImage.ensure(context).catch((error: unknown) => {
      throw imageOptions.mapError(error);
    });
  /** Set on the first start when the binding has one engine that shares this machine's filesystem (and egress asks for it). */
  let channel: EgressChannel | undefined;

  /** Sets a started container up: its egress proxy, then the capability's connection. */
  async function setup(
    prepared: PreparedContainers<CONNECTION, FACADE>,
    context: Omit<ContainerConnectContext, "onAgent">,
    directPorts: boolean,
  ): Promise<ContainerState<CONNECTION>> {
    const { containerId, driver } = context;
    const audience = createConnectionAudience();
    const { policy, egress } = network;
    const proxy = policy
      ? createEgressProxy({
          policy,
          maxConnections: egress?.maxConnections,
          maxBytes: egress?.maxBytes,
          onConnection: (event) => options.onConnection?.({ ...event, containerId }),
        })
      : undefined;
    try {
      const connection = await prepared.connect({
        ...context,
        onAgent: proxy
          ? (client, signal) => serveEgress({ client, proxy, audience, channel, signal })
          : undefined,
      });
      // A port's connection is made from here, not relayed by the agent, where the engine shares this machine.
      const loopback =
        directPorts && prepared.openPort ? createContainerLoopback({ driver, containerId }) : undefined;
      return { connection, proxy, audience, loopback };
    } catch (error) {
      proxy?.close();
      throw error;
    }
  }

  /** The first start: the image, the agent's volume, the egress channel, then the capability's `prepare`. */
  async function prepare({
    signal,
  }: {
    signal: AbortSignal;
  }): Promise<PreparedPool<ContainerState<CONNECTION>, FACADE>> {
    const image = await bindingImage.resolve(signal).catch((error: unknown) => {
      throw imageOptions.mapError(error);
    });
    // The agent lives on a read-only volume shared by every container of an engine (sandboxes and browsers),
    // filled once per engine (prepareEngine) through the archive API, so nothing is copied into each container.
    const agentVolume = useAgent ? await agentVolumeMount() : undefined;
    // A host directory (the egress relay's and the agent dial's sockets) is mounted only on a single engine that
    // shares this machine's filesystem: the mount is part of the spec every engine's containers share, and an
    // engine reached over SSH never does.
    const [engine] = engines;
    // Drivers of the engine DOCKER_HOST names are one engine: one probe of the directory per process.
    const engineKey = options.engines === undefined && options.driver === undefined ? engine?.id : undefined;
    const local =
      engine && engines.length === 1 && !engine.remote
        ? { driver: engine.driver, image, engineKey }
        : undefined;
    // The probes make containers of the image: it must be there first.
    if (engine && local) await ensureImage({ engineId: engine.id, driver: engine.driver, signal });
    channel = network.fastEgress && local ? await prepareEgressChannel(local) : undefined;
    const prepared = await options.prepare({ image, agentVolume, channel, local, signal });
    const { healthy, openPort, checkpoints } = prepared;
    return {
      image,
      spec: prepared.spec,
      ...(prepared.containerEnv ? { containerEnv: prepared.containerEnv } : {}),
      setup: ({ containerId, driver, signal, adopted, createEnv }) =>
        setup(
          prepared,
          { containerId, driver, signal, adopted, createEnv },
          local !== undefined && options.directPorts !== false,
        ),
      teardown: async ({ state }) => {
        // The lease ended: its connections close with it.
        state?.proxy?.close();
        state?.loopback?.close();
        await state?.connection.close();
      },
      ...(healthy ? { healthCheck: ({ state }) => state !== undefined && healthy(state.connection) } : {}),
      ensureImage,
      ...(useAgent
        ? {
            prepareEngine: async ({ driver, signal }) => {
              await prepareAgentVolume({ driver, image, signal });
            },
          }
        : {}),
      ...(openPort
        ? {
            openPort: (lease, port, signal) => {
              const { connection, loopback } = lease.state;
              const viaCapability = () =>
                openPort({ connection, containerId: lease.containerId }, port, signal);
              return loopback ? loopback.connect(port, signal, viaCapability) : viaCapability();
            },
          }
        : {}),
      ...(checkpoints
        ? {
            checkpoints: (lease) =>
              checkpoints({ connection: lease.state.connection, containerId: lease.containerId }),
          }
        : {}),
      facadeOf: (lease, pool) => ({
        facade: prepared.facade({
          connection: lease.state.connection,
          proxy: lease.state.proxy,
          driver: lease.driver,
          containerId: lease.containerId,
          image: pool.image,
        }),
        audience: lease.state.audience,
      }),
    };
  }

  return createPooledBinding<ContainerState<CONNECTION>, FACADE>({
    capability: options.capability,
    lifetime: options.lifetime,
    idleTtlMs: options.idleTtlMs,
    engines,
    pool: options.pool,
    tuning: options.tuning,
    poolId: options.poolId,
    carryOver: options.carryOver,
    carryOverStopped: options.carryOverStopped,
    calls: options.calls,
    closedError: options.closedError,
    prepare,
  });
}
