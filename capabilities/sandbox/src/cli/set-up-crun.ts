import { setTimeout as sleep } from "node:timers/promises";
import { addCrunRuntime } from "./add-crun-runtime.ts";
import type { CheckResult } from "./check-result.ts";
import { findExecutable } from "./find-executable.ts";
import type { EngineTarget } from "./inspect-engine.ts";
import { liveProcessFromPidFile } from "./live-process.ts";

const check = "crun";
/** How long a reloaded engine may take to list the new runtime. */
const reloadTimeoutMs = 15_000;

/**
 * The step of `pai engine setup` that registers Debian's (or any) `crun` with the engine on this machine: added to
 * its `daemon.json`, then the engine reloaded with SIGHUP (no restart: running containers are untouched) when its
 * pid file names a running `dockerd`. An engine that lists `crun` already is left alone. Never installs `crun`.
 */
export async function setUpCrun(options: {
  engine: EngineTarget;
  root: boolean;
  /** The engine's `daemon.json`. */
  configPath: string;
  /** The engine's pid file (`dockerd --pidfile`). */
  pidFile: string;
  signal: AbortSignal;
}): Promise<CheckResult> {
  const { engine, configPath, pidFile, signal } = options;
  if (engine.info?.runtimes.includes("crun")) {
    return { check, status: "ok", message: "runtime crun registered with the engine" };
  }
  if (!engine.local) {
    return {
      check,
      status: "failed",
      message: `the engine has no runtime crun and runs on another host (${engine.info?.hostname})`,
      fix: "run `npx pai engine setup` as root on that host",
    };
  }
  const crunPath = await findExecutable("crun");
  if (crunPath === undefined) {
    return {
      check,
      status: "failed",
      message: "crun is not installed; containers run on runc (slower cold starts)",
      fix: "install it (Debian, Ubuntu: `apt-get install crun`), then run `npx pai engine setup` again",
    };
  }
  if (!options.root) {
    return {
      check,
      status: "failed",
      message: `${engine.info === undefined ? "no engine answers to tell whether it has runtime crun" : "the engine has no runtime crun"}, and registering it in ${configPath} needs root`,
      fix: "run `sudo npx pai engine setup`",
    };
  }
  let added: boolean;
  try {
    added = await addCrunRuntime({ configPath, crunPath });
  } catch (error) {
    return { check, status: "failed", message: error instanceof Error ? error.message : String(error) };
  }
  const inConfig = added
    ? `added runtime crun (${crunPath}) to ${configPath}`
    : `runtime crun is in ${configPath}`;
  if (engine.info === undefined) {
    return {
      check,
      status: "failed",
      message: `${inConfig}, and no engine answers to register it`,
      fix: `start the engine (it reads ${configPath} as it starts), then run \`npx pai engine setup\` again`,
    };
  }
  const pid = await liveProcessFromPidFile(pidFile, { names: ["dockerd"] });
  if (pid === undefined) {
    return {
      check,
      status: "failed",
      message: `${inConfig}, but no running dockerd has the pid in ${pidFile} to reload it`,
      fix: "reload the engine so it reads it (`kill -HUP <dockerd's pid>` or `systemctl reload docker`), or pass --pid-file",
    };
  }
  // dockerd reloads `runtimes` from its configuration file on SIGHUP.
  process.kill(pid, "SIGHUP");
  for (const deadline = Date.now() + reloadTimeoutMs; Date.now() < deadline; ) {
    if ((await engine.refresh({ signal }))?.runtimes.includes("crun")) {
      return {
        check,
        status: "changed",
        message: `${inConfig} and reloaded dockerd (pid ${pid}): crun registered`,
      };
    }
    await sleep(500, undefined, { signal });
  }
  return {
    check,
    status: "failed",
    message: `${inConfig} and reloaded dockerd (pid ${pid}), which did not register crun`,
    fix: `see the engine's log; a dockerd started with another --config-file reads that one (pass it with --config)`,
  };
}
