import type { ContainerDriver } from "./container-driver.ts";
import { createDockerDriver, type DockerDriverOptions } from "./docker-driver.ts";
import { dockerEngineId, reachesEngineOverSsh } from "./docker-engine-connection.ts";
import type { PoolEngine } from "./multi-engine-pool.ts";

/**
 * One engine of a Docker binding that spans several (`dockerSandbox({ engines })`): how to reach it (a socket,
 * TCP with TLS, or SSH), how the driver uses it, and its share of the pool.
 */
export interface DockerEngine extends DockerDriverOptions {
  /**
   * The engine's name on leases (`meta.engine`), in events, metrics and errors. Keep it stable: a restarted
   * process reattaches a sandbox on the engine its lease names.
   * @default dockerEngineId(this), e.g. `unix:///var/run/docker.sock` or `tcp://10.0.0.5:2376`
   */
  id?: string;
  /** Started containers kept ready on this engine. @default the binding's `pool.min` */
  min?: number;
  /** Containers on this engine at most, leased ones included. @default the binding's `pool.max` */
  max?: number;
}

const remoteFlag = (connection: DockerEngine) => (reachesEngineOverSsh(connection) ? { remote: true } : {});

/** How a Docker binding names its engines: several, one driver of your own, or neither (`DOCKER_HOST`). */
export interface DockerEnginesOptions {
  engines?: readonly DockerEngine[] | undefined;
  driver?: ContainerDriver | undefined;
}

/**
 * The engines of a Docker binding's pool: a driver per entry of `engines`, or the one `driver` given (engine id
 * `default`), or the engine `DOCKER_HOST` names (or the default socket). An engine reached over SSH is `remote`.
 * @throws TypeError for both `engines` and `driver`, an empty `engines`, or two engines with the same id.
 */
export function dockerPoolEngines(options: DockerEnginesOptions): PoolEngine[] {
  if (options.engines !== undefined && options.driver !== undefined) {
    throw new TypeError("Give either engines or driver, not both");
  }
  if (options.driver !== undefined) return [{ id: "default", driver: options.driver }];
  if (options.engines === undefined) {
    return [{ id: dockerEngineId(), driver: createDockerDriver(), ...remoteFlag({}) }];
  }
  if (options.engines.length === 0) throw new TypeError("engines must list at least one engine");
  const seen = new Set<string>();
  return options.engines.map((engine) => {
    const id = engine.id ?? dockerEngineId(engine);
    if (seen.has(id)) throw new TypeError(`Two engines have the id ${id}: give them distinct ids`);
    seen.add(id);
    return {
      id,
      driver: createDockerDriver(engine),
      ...(engine.min !== undefined ? { min: engine.min } : {}),
      ...(engine.max !== undefined ? { max: engine.max } : {}),
      ...remoteFlag(engine),
    };
  });
}
