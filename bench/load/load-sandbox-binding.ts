import type { DockerEngine } from "@pai/pool";
import { dockerSandbox } from "@pai/sandbox";

/**
 * The sandbox binding of one load-test process. Every process spans all the engines: each new sandbox goes to the
 * engine with the most free capacity, and a dead process's sandboxes are freed on whichever engine they are.
 * `max` counts per engine, as `pool.max` does.
 */
export function loadSandboxBinding(options: {
  engines: readonly string[];
  image: string;
  poolId: string;
  max: number;
}) {
  return dockerSandbox({
    image: options.image,
    poolId: options.poolId,
    pool: { min: 2, max: options.max, acquireTimeoutMs: 60_000 },
    engines: options.engines.map(dockerEngine),
  });
}

/** The engine a DOCKER_HOST value names (`unix:///path` or `tcp://host:port`), with that value as its id. */
export function dockerEngine(host: string): DockerEngine {
  const url = new URL(host);
  if (url.protocol === "unix:") return { id: host, socketPath: url.pathname };
  if (url.protocol === "tcp:") return { id: host, host: url.hostname, port: url.port };
  throw new Error(`an engine is a DOCKER_HOST value (unix:///path or tcp://host:port), not ${host}`);
}
