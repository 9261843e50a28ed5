import { hostname } from "node:os";
import { type ContainerDriver, createDockerDriver, dockerEngineId, type EngineInfo } from "@pai/pool";

/** The engine the command line works on, as `DOCKER_HOST` (or the default socket) names it. */
export interface EngineTarget {
  /** `unix:///var/run/docker.sock`, `tcp://host:2376`, `ssh://user@host:22`. */
  id: string;
  /** Where `id` comes from: `DOCKER_HOST` or the default socket. */
  source: string;
  /** What the engine says about itself; `undefined` when it does not answer. */
  info: EngineInfo | undefined;
  /** Why it does not answer. */
  error: string | undefined;
  /**
   * Whether the engine runs on this machine, so its host can be equipped from here: it answers and names this
   * machine as its host, or (not answering yet) it is reached through a unix socket.
   */
  local: boolean;
  /** Asks the engine again (e.g. whether a reload registered a runtime). */
  refresh(options: { signal: AbortSignal }): Promise<EngineInfo | undefined>;
}

/** Asks the engine of `DOCKER_HOST` (or the default socket) what it is, within 15 s. */
export async function inspectEngine(options: { signal: AbortSignal }): Promise<EngineTarget> {
  const fromEnvironment = process.env.DOCKER_HOST !== undefined && process.env.DOCKER_HOST !== "";
  const id = dockerEngineId();
  let error: string | undefined;
  let driver: ContainerDriver | undefined;
  try {
    driver = createDockerDriver({ requestTimeoutMs: 15_000 });
  } catch (cause) {
    error = cause instanceof Error ? cause.message : String(cause);
  }
  const refresh = async ({ signal }: { signal: AbortSignal }) => {
    if (driver === undefined) return undefined;
    try {
      return await driver.info({ signal });
    } catch (cause) {
      error = cause instanceof Error ? cause.message : String(cause);
      return undefined;
    }
  };
  const info = await refresh(options);
  return {
    id,
    source: fromEnvironment ? "DOCKER_HOST" : "the default socket",
    info,
    error: info === undefined ? error : undefined,
    local: info === undefined ? id.startsWith("unix://") : info.hostname === hostname(),
    refresh,
  };
}
