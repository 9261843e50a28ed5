import {
  agentSupervisorSpec,
  EGRESS_PROXY_PORT,
  type EgressConnectionEvent,
  type EgressNetworkOptions,
  egressEnvironment,
} from "@pai/container-agent";
import type { CapabilityLifetime } from "@pai/core";
import {
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
import { browserCalls } from "./browser-calls.ts";
import { BrowserError } from "./browser-error.ts";
import type { BrowserFacade } from "./browser-facade.ts";
import { browserImage, browserImageError } from "./browser-image.ts";
import { chromiumCommand, PROFILE_DIRECTORY } from "./chromium-command.ts";
import { type ChromiumConnection, connectChromium } from "./connect-chromium.ts";
import { createBrowserFacade } from "./create-browser-facade.ts";

/** Options of {@link dockerBrowser}. */
export interface DockerBrowserOptions {
  /**
   * Image of the browser containers: it must have `/usr/bin/chromium` and a non-root user 1000. A given image
   * must be on every engine: it is never built or pulled (a missing one fails with `IMAGE_UNAVAILABLE`).
   * @default PAI's browser image (`browserImage`: `pai/browser:<hash of its context and base>`), built from this
   * package's `image/` folder on each engine that lacks it, on the first use (a few minutes; see `onImageProgress`)
   */
  image?: string;
  /**
   * The base PAI's browser image is built on when `image` is not given (a Debian bookworm, or an image with apt
   * that works like it). Pulled when the engine lacks it.
   * @default `PAI_BASE_IMAGE` when set; else `debian:bookworm-slim` when the engine has it or a registry gives it
   * (a pull that must start answering within 20 s); else a Debian rootfs made with debootstrap (`pai/base:<hash>`:
   * the engine's, or imported from /var/cache/pai-images, or made when this process is root and has debootstrap)
   */
  baseImage?: string;
  /**
   * Each line of progress while an engine's browser image is provided (pulling the base, each build step and its
   * output, waiting for another process building it), with the engine's id.
   * @default each line but a step's own output written to stderr (`writeImageProgress`)
   */
  onImageProgress?: (progress: ImageProgress) => void;
  /** The warm pool: its idle containers run a Chromium that Playwright is already attached to. */
  pool?: PooledBindingPoolOptions;
  /**
   * Per-container limits (merged over the defaults).
   * @default 1 GiB memory (no swap), 1 CPU, 512 pids, 1 GiB largest file
   */
  limits?: ContainerLimits;
  /** Size of `/dev/shm`; at least 256 MiB. @default 268435456 */
  shmSizeBytes?: number;
  /** Overrides the capability's default lifetime (`user`). */
  lifetime?: CapabilityLifetime;
  /** Idle time after which `thread`/`user` browsers are removed. @default 30 minutes (the runtime's) */
  idleTtlMs?: number;
  /** The engine. @default createDockerDriver() (DOCKER_HOST or the default socket) */
  driver?: ContainerDriver;
  /**
   * Several engines (instead of `driver`): each new browser goes to the reachable engine with the most free
   * capacity; `pool.min` and `pool.max` count per engine. The lease records the engine (`meta.engine`) for a
   * restarted process; a browser whose engine stops answering is lost (`CONTAINER_LOST` naming the engine).
   * An engine may be remote: DevTools and the egress proxy travel over the agent's connection through the
   * engine's API, so nothing but the API needs to be reachable.
   */
  engines?: readonly DockerEngine[];
  /**
   * The pool's `pai.pool` label: a restarted process finds its containers (to reattach or reap) by it. Runtime
   * processes with identical bindings (replicas of an app, two demos) share it safely: each container carries its
   * process's owner (`pai.owner`), and a runtime reaps only the containers of owners its store knows to be dead
   * (and this pool id's containers that carry no owner, from a binding warmed by hand without a runtime).
   * @default `pai-browser-<hash of the container spec>`
   */
  poolId?: string;
  /** Deadline of a facade operation that sets none. @default 30000 */
  timeoutMs?: number;
  /** The browser window (and screenshot viewport). @default { width: 1280, height: 800 } */
  windowSize?: { width: number; height: number };
  /** Extra Chromium flags, after the ones this binding sets. */
  chromiumArgs?: readonly string[];
  /**
   * What pages may reach. The container never gets a network interface but `lo`; Chromium sends every request
   * (loopback included) through PAI's egress proxy, whose connections the agent relays to the host (see
   * `EgressNetworkOptions.channel`), where each
   * connection is resolved and decided by address (see `EgressAllowEntry`). The default, `{ allow: ["*:*"] }`,
   * reaches public addresses on any port and nothing else: not the host's loopback services, not private ranges,
   * not the cloud metadata address (add an exact `host:port` entry for one of those).
   *
   * - `"none"`: nothing at all (pages from `about:blank` and `evaluate` only).
   * - `"unsafe-host"`: the host's network namespace, no proxy — every service on the host's loopback is
   *   reachable by any page. For trusted pages only.
   * @default { allow: ["*:*"] }
   */
  network?: "none" | "unsafe-host" | EgressNetworkOptions;
  /**
   * Every connection a browser made through the egress proxy, when it ends (a refused one at once), with the
   * container it came from. The run whose operation was running when it opened also gets it as a capability
   * status event (`status: "connection"`).
   */
  onConnection?: (event: BrowserConnectionEvent) => void;
  /**
   * Which URLs `goto` may open (after the scheme check), on top of `network`: it sees the URL `goto` is given,
   * not redirects or sub-resources (the egress policy sees those).
   * @default every http(s) URL
   */
  allowUrl?: (url: URL) => boolean;
  /** The pool's tuning under load (see `createContainerPool`). */
  poolTuning?: PooledBindingTuning;
}

/** A connection through a browser's egress proxy, as `dockerBrowser({ onConnection })` sees it. */
export interface BrowserConnectionEvent extends EgressConnectionEvent {
  /** The browser's container. */
  containerId: string;
}

/**
 * A provisioned browser; `bind({ signal, report })` is the facade with every operation also aborted by `signal`,
 * the connections made while one of its operations runs told to `report`.
 */
export interface ProvisionedBrowser extends PooledResource<BrowserFacade> {}

/**
 * The binding `dockerBrowser()` returns, with a view of its pool: `start()` warms it (resolves once `pool.min`
 * browsers are running and connected); `poolId`, `image` and `metrics()` once started, and the pool's `events`
 * (`engine`: an engine became reachable or unreachable, `lost`: a lease was lost, `error`).
 */
export interface DockerBrowserBinding extends PooledBinding<BrowserFacade> {}

const MIN_SHM_BYTES = 256 * 1024 * 1024;
const DEFAULT_LIMITS = { memoryBytes: 1024 ** 3, nanoCpus: 1_000_000_000, pidsLimit: 512 };
/** Connections a browser's egress proxy keeps open at once, unless `network.maxConnections` says otherwise. */
const DEFAULT_MAX_CONNECTIONS = 64;

/**
 * The Docker binding of the `browser` capability: one fresh container per lease (a browser per user by default)
 * from a warm pool whose idle containers already run a Chromium Playwright is attached to; the container is
 * removed when the lease ends and never reused for another key. A restarted process adopts the containers its
 * recorded leases name (restarting Chromium on the same profile) and reaps the rest; a recorded browser that
 * another spec made (an upgrade), or whose set-up fails, is replaced by a fresh one that inherits its profile.
 *
 * Chromium runs as user 1000 with no capabilities (the container's main process and the agent run as root with
 * only the few the agent needs to start it so, which no page can use or signal), `no-new-privileges`, a read-only root with a
 * writable `/tmp` volume (the profile lives there), memory/CPU/pids limits and a 256 MiB `/dev/shm`, on network
 * `none`. DevTools travels over `--remote-debugging-pipe`, relayed by the in-container agent over its one
 * connection to the host: nothing listens. Pages reach the network only through the egress proxy (`network`).
 *
 * @example
 * const runtime = createAgentRuntime({
 *   pai,
 *   capabilities: { browser: dockerBrowser({ pool: { min: 1, max: 4, acquireTimeoutMs: 30_000 } }) },
 * });
 */
export function dockerBrowser(options: DockerBrowserOptions = {}): DockerBrowserBinding {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const given = options.network ?? { allow: ["*:*"] };
  const network = parseBindingNetwork(
    typeof given === "object"
      ? { ...given, maxConnections: given.maxConnections ?? DEFAULT_MAX_CONNECTIONS }
      : given,
    () =>
      new BrowserError(
        "INVALID_ARGUMENT",
        'dockerBrowser: network is "none", "unsafe-host" or { allow: [...] }',
      ),
  );
  const { policy } = network;
  const command = chromiumCommand({
    ...(options.windowSize ? { windowSize: options.windowSize } : {}),
    ...(policy ? { proxyServer: `http://127.0.0.1:${EGRESS_PROXY_PORT}` } : {}),
    ...(options.chromiumArgs ? { extraArgs: options.chromiumArgs } : {}),
  });

  async function prepare({
    image,
    agentVolume,
    channel,
  }: DockerPrepareContext): Promise<PreparedContainers<ChromiumConnection, BrowserFacade>> {
    const spec: ContainerSpec = {
      image,
      // The main process only keeps the container up; the agent starts Chromium.
      cmd: ["sleep", "infinity"],
      // Root, which Chromium cannot signal: the agent starts Chromium (and everything else) as SANDBOX_USER.
      ...agentSupervisorSpec,
      env: {
        HOME: "/tmp",
        XDG_CONFIG_HOME: "/tmp/.config",
        XDG_CACHE_HOME: "/tmp/.cache",
        ...(policy ? egressEnvironment(policy) : {}),
      },
      workingDir: "/tmp",
      network: network.mode,
      readOnlyRootfs: true,
      writablePaths: ["/tmp"],
      ...(agentVolume ? { sharedVolumes: [agentVolume] } : {}),
      ...(channel ? { hostDirectories: [channel.mount] } : {}),
      shmSizeBytes: Math.max(MIN_SHM_BYTES, options.shmSizeBytes ?? MIN_SHM_BYTES),
      limits: { ...DEFAULT_LIMITS, ...(options.limits ?? {}) },
    };
    return {
      spec,
      // A container counts as warm once its Chromium runs and Playwright is attached.
      connect: ({ driver, containerId, signal, adopted, onAgent }) =>
        connectChromium({
          driver,
          containerId,
          command,
          adopted,
          onAgent,
          ...(signal ? { signal } : {}),
          timeoutMs: 30_000,
        }),
      healthy: (connection) => connection.isConnected(),
      facade: ({ connection, proxy }) =>
        createBrowserFacade({
          connection,
          image,
          timeoutMs,
          ...(options.allowUrl ? { allowUrl: options.allowUrl } : {}),
          ...(proxy ? { refusalFor: (target: string) => proxy.refusalFor(target) } : {}),
        }),
    };
  }

  return createDockerBinding<ChromiumConnection, BrowserFacade>({
    capability: "browser",
    lifetime: options.lifetime,
    idleTtlMs: options.idleTtlMs,
    driver: options.driver,
    engines: options.engines,
    pool: options.pool,
    tuning: options.poolTuning,
    poolId: options.poolId,
    // The profile (cookies, logins, storage) goes to a successor: after an upgrade changed the spec, or when the
    // container cannot be set up or started again. Chromium holds it open, so it is copied in while stopped.
    carryOver: [PROFILE_DIRECTORY],
    carryOverStopped: true,
    image: {
      recipe: browserImage,
      image: options.image,
      baseImage: options.baseImage,
      onProgress: options.onImageProgress,
      mapError: browserImageError,
    },
    network,
    onConnection: options.onConnection,
    calls: browserCalls,
    closedError: () => new BrowserError("CAPABILITY_UNAVAILABLE", "the browser binding is closed"),
    prepare,
  });
}
