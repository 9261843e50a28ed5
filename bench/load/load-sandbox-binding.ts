import { createDockerDriver } from "@pai/pool";
import { dockerSandbox } from "@pai/sandbox";

/**
 * The sandbox binding of one load-test process. Today a binding speaks to one engine, so each process gets one
 * (the driver spreads processes over the engines it was given). Once `dockerSandbox({ engines })` lands, every
 * process takes all the engines here (`engines: engines.map(...)` instead of `driver`) and places each sandbox
 * on the engine with the most free capacity.
 */
export function loadSandboxBinding(options: {
  engines: string[];
  image: string;
  poolId: string;
  max: number;
}) {
  const [engine] = options.engines;
  return dockerSandbox({
    image: options.image,
    poolId: options.poolId,
    pool: { min: 2, max: options.max, acquireTimeoutMs: 60_000 },
    driver: createDockerDriver(driverOptions(engine!)),
  });
}

/** Driver options for a DOCKER_HOST value: `unix:///path` or `tcp://host:port`. */
export function driverOptions(host: string): { socketPath: string } | { host: string; port: string } {
  const url = new URL(host);
  if (url.protocol === "unix:") return { socketPath: url.pathname };
  if (url.protocol === "tcp:") return { host: url.hostname, port: url.port };
  throw new Error(`an engine is a DOCKER_HOST value (unix:///path or tcp://host:port), not ${host}`);
}
