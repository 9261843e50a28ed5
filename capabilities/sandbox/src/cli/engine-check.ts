import type { CheckResult } from "./check-result.ts";
import type { EngineTarget } from "./inspect-engine.ts";

/** The first line of `pai doctor` and `pai engine setup`: which engine, and whether it answers. */
export function engineCheck(engine: EngineTarget): CheckResult {
  if (engine.info === undefined) {
    const refused = engine.error?.includes("EACCES") === true;
    return {
      check: "engine",
      status: "failed",
      message: `no engine answers at ${engine.id} (${engine.source}): ${engine.error}`,
      fix: refused
        ? "the engine's socket refuses this user: run as root, or join the group that owns the socket (`docker`)"
        : "start Docker (Debian: `apt-get install docker.io`, then start dockerd), or point DOCKER_HOST at an engine that runs",
    };
  }
  const { serverVersion, architecture, hostname } = engine.info;
  return {
    check: "engine",
    status: "ok",
    message: `${engine.id} (${engine.source}) answers: Docker ${serverVersion} on ${architecture}, ${engine.local ? "this machine" : `host ${hostname}`}`,
  };
}
