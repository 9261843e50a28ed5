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
} from "@pai/pool";
import { bindBrowserFacade } from "./bind-browser-facade.ts";
import type { BrowserFacade } from "./browser-facade.ts";
import { chromiumCommand } from "./chromium-command.ts";
import { type ChromiumConnection, connectChromium } from "./connect-chromium.ts";
import { createBrowserFacade } from "./create-browser-facade.ts";
import { resolveDefaultBrowserImage } from "./default-browser-image.ts";

/** Options of {@link dockerBrowser}. */
export interface DockerBrowserOptions {
  /**
   * Image of the browser containers (it must exist locally; nothing is pulled). It must have `/usr/bin/chromium`
   * and a non-root user 1000.
   * @default the tag `images/build --print-tag browser` prints when that image exists, else `pai/browser:latest`
   */
  image?: string;
  /** The warm pool: its idle containers run a Chromium that is already listening. */
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
   * The engines must run on this host: Chromium's DevTools endpoint is reached on its loopback (network `host`).
   */
  engines?: readonly DockerEngine[];
  /**
   * The pool's `pai.pool` label: a restarted process finds its containers (to reattach or reap) by it. Two live
   * processes (or two bindings) on one engine must not share it, as each reaps what it does not own.
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
   * Which URLs `goto` may open (after the scheme check). The browser shares the host's network namespace (its
   * DevTools endpoint is on the host's loopback), so a deployment that lets a model pick URLs should refuse the
   * host's own services and private ranges here.
   * @default every http(s) URL
   */
  allowUrl?: (url: URL) => boolean;
  /** The pool's tuning under load (see `createContainerPool`). */
  poolTuning?: PooledBindingTuning;
}

/** A provisioned browser; `bind({ signal })` is the facade with every operation also aborted by `signal`. */
export interface ProvisionedBrowser extends ProvisionedResource<BrowserFacade> {
  bind(scope: { signal: AbortSignal }): BrowserFacade;
}

/** The binding `dockerBrowser()` returns, with a view of its pool. */
export interface DockerBrowserBinding extends CapabilityBinding<BrowserFacade> {
  /** Warms the pool: resolves once `pool.min` browsers are running and connected. */
  start(): Promise<void>;
  provision(request: ProvisionRequest): Promise<ProvisionedBrowser>;
  reattach(lease: LeaseRecord, signal: AbortSignal): Promise<ProvisionedBrowser | undefined>;
  /** The pool id, once started. */
  readonly poolId: string | undefined;
  /** The image, once started. */
  readonly image: string | undefined;
  /** The pool's metrics (summed, and per engine: status, free capacity, lost leases), once started. */
  metrics(): MultiEnginePoolMetrics | undefined;
  /** The pool's events: `engine` (an engine became reachable or unreachable), `lost` (a lease was lost), `error`. */
  readonly events: PoolEvents<MultiEnginePoolEventMap>;
}

const MIN_SHM_BYTES = 256 * 1024 * 1024;
const DEFAULT_LIMITS = { memoryBytes: 1024 ** 3, nanoCpus: 1_000_000_000, pidsLimit: 512 };

/**
 * The Docker binding of the `browser` capability: one fresh container per lease (a browser per user by default)
 * from a warm pool whose idle containers already run a listening, connected Chromium; the container is removed
 * when the lease ends and never reused for another key. A restarted process reconnects to the browsers its
 * recorded leases name (their cookies and open page intact) and reaps the rest.
 *
 * Containers run as user 1000 with all capabilities dropped, `no-new-privileges`, a read-only root with a
 * writable `/tmp` volume (the profile lives there), memory/CPU/pids limits and a 256 MiB `/dev/shm`. They share
 * the host's network namespace (`network: "host"`): Chromium listens for DevTools on `127.0.0.1` only.
 *
 * @example
 * const runtime = createAgentRuntime({
 *   pai,
 *   capabilities: { browser: dockerBrowser({ pool: { min: 1, max: 4, acquireTimeoutMs: 30_000 } }) },
 * });
 */
export function dockerBrowser(options: DockerBrowserOptions = {}): DockerBrowserBinding {
  const engines = dockerPoolEngines({ engines: options.engines, driver: options.driver });
  const timeoutMs = options.timeoutMs ?? 30_000;
  const pooled = createPooledBinding<ChromiumConnection, ProvisionedBrowser>({
    name: "browser",
    engines,
    ...(options.pool ? { pool: options.pool } : {}),
    ...(options.poolTuning ? { tuning: options.poolTuning } : {}),
    ...(options.poolId ? { poolId: options.poolId } : {}),
    closedError: () => new PaiError("CAPABILITY_UNAVAILABLE", "the browser binding is closed"),
    async preparePool() {
      const image = options.image ?? (await resolveDefaultBrowserImage());
      const spec: ContainerSpec = {
        image,
        cmd: chromiumCommand({
          ...(options.windowSize ? { windowSize: options.windowSize } : {}),
          ...(options.chromiumArgs ? { extraArgs: options.chromiumArgs } : {}),
        }),
        user: "1000:1000",
        env: { HOME: "/tmp", XDG_CONFIG_HOME: "/tmp/.config", XDG_CACHE_HOME: "/tmp/.cache" },
        workingDir: "/tmp",
        network: "host",
        readOnlyRootfs: true,
        writablePaths: ["/tmp"],
        shmSizeBytes: Math.max(MIN_SHM_BYTES, options.shmSizeBytes ?? MIN_SHM_BYTES),
        limits: { ...DEFAULT_LIMITS, ...(options.limits ?? {}) },
      };
      return {
        image,
        spec,
        // A container counts as warm once its Chromium listens and Playwright is attached.
        setup: ({ containerId, driver, signal }) =>
          connectChromium({ driver, containerId, signal, timeoutMs: 30_000 }),
        teardown: ({ state }) => state?.close(),
      };
    },
    resourceOf(lease, pool) {
      const facade = createBrowserFacade({
        connection: lease.state,
        image: pool.image,
        timeoutMs,
        ...(options.allowUrl ? { allowUrl: options.allowUrl } : {}),
      });
      return {
        facade,
        resourceId: lease.containerId,
        meta: { poolId: pool.poolId, image: pool.image },
        release: () => lease.release(),
        bind: ({ signal }) => bindBrowserFacade(facade, signal),
      };
    },
  });
  return asCapabilityBinding(pooled, {
    capability: "browser",
    lifetime: options.lifetime,
    idleTtlMs: options.idleTtlMs,
  }) as DockerBrowserBinding;
}
