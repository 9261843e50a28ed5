import { createHash } from "node:crypto";
import type { DockerSandboxOptions } from "../docker-sandbox.ts";

/**
 * The part of {@link PaiSandboxFixtureOptions} that makes the pool (and so travels to the run's pool process):
 * the binding's options that decide what a container is and how many are kept.
 */
export type PaiSandboxPoolOptions = Pick<
  DockerSandboxOptions,
  "image" | "limits" | "network" | "env" | "pool" | "poolTuning"
>;

/**
 * Options of `paiSandboxFixture`: `dockerSandbox`'s options, less what the fixture decides itself (the pool id,
 * the lifetime, the engine: `DOCKER_HOST` or the default socket, the same in every worker).
 *
 * - `pool.min` sandboxes are kept ready, their agent already connected; `pool.max` bounds the sandboxes of
 *   these options at once, handed out and ready together. @default `{ min: 1, max: 10, acquireTimeoutMs: 30000 }`
 */
export type PaiSandboxFixtureOptions = PaiSandboxPoolOptions &
  Pick<DockerSandboxOptions, "shell" | "maxOutputBytes">;

/** The pool options of fixture options (a copy with only those fields). */
export function poolOptionsOf(options: PaiSandboxFixtureOptions): PaiSandboxPoolOptions {
  const { image, limits, network, env, pool, poolTuning } = options;
  return {
    ...(image !== undefined ? { image } : {}),
    ...(limits !== undefined ? { limits } : {}),
    ...(network !== undefined ? { network } : {}),
    ...(env !== undefined ? { env } : {}),
    ...(pool !== undefined ? { pool } : {}),
    ...(poolTuning !== undefined ? { poolTuning } : {}),
  };
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}

/** Equal pool options (whatever their key order) give the same key: the test files that use them share a pool. */
export function poolKeyOf(options: PaiSandboxPoolOptions): string {
  return createHash("sha256")
    .update(JSON.stringify(canonical(poolOptionsOf(options))))
    .digest("hex")
    .slice(0, 12);
}
