import { allPassed, type CheckResult, formatCheck } from "./check-result.ts";
import type { CliIo } from "./cli-io.ts";
import { diskPluginFiles } from "./disk-plugin-files.ts";
import { engineCheck } from "./engine-check.ts";
import { inspectEngine } from "./inspect-engine.ts";
import { parseCliOptions } from "./parse-cli-options.ts";
import { setUpCgroups } from "./set-up-cgroups.ts";
import { setUpCrun } from "./set-up-crun.ts";
import { setUpDiskPlugin } from "./set-up-disk-plugin.ts";

const synopsis = "usage: pai engine setup [options]";
const help = [
  synopsis,
  "",
  "Equips the Docker engine on this machine (DOCKER_HOST, or the default socket) for PAI's sandboxes, as root:",
  "binds cgroup controllers crun needs on a hybrid cgroup host, registers crun as a runtime in the engine's",
  "daemon.json (reloading the engine with SIGHUP; never restarting it), and starts the pai-disk volume plugin,",
  "which bounds each sandbox's disk (limits.diskBytes). What is in place is left alone: a second run changes",
  "nothing. Installs nothing: a missing tool is named with how to install it. Exit code 0 when all is in place.",
  "",
  "  --config <file>            the engine's daemon.json        (default /etc/docker/daemon.json)",
  "  --pid-file <file>          the engine's pid file           (default /var/run/docker.pid)",
  "  --plugin-name <name>       the disk plugin's name          (default pai-disk)",
  "  --plugin-state-dir <dir>   the disk plugin's state folder  (default /var/lib/<name>)",
  "  --plugin-socket <path>     the disk plugin's socket (default /run/docker/plugins/<name>.sock, where engines look)",
  "  --json                     one JSON object instead of lines",
];

const options = {
  config: { type: "string", default: "/etc/docker/daemon.json" },
  "pid-file": { type: "string", default: "/var/run/docker.pid" },
  "plugin-name": { type: "string", default: "pai-disk" },
  "plugin-state-dir": { type: "string" },
  "plugin-socket": { type: "string" },
  json: { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
} as const;

/**
 * `pai engine setup`: equips the engine on this machine (cgroups for crun, crun registered, the disk plugin
 * running), one line per step (`OK` in place, `DONE` changed now, `FAIL` with the fix). Exit code 0 when every
 * step is in place, 1 when one failed, 2 for bad usage.
 */
export async function engineCommand(args: readonly string[], io: CliIo): Promise<number> {
  const [subcommand, ...rest] = args;
  if (subcommand === "--help" || subcommand === "-h") {
    for (const line of help) io.out(line);
    return 0;
  }
  if (subcommand !== "setup") {
    io.err(subcommand === undefined ? "pai engine: which one?" : `pai engine: unknown command ${subcommand}`);
    io.err(synopsis);
    return 2;
  }
  const values = parseCliOptions({ args: rest, options, usage: synopsis, io });
  if (values === undefined) return 2;
  if (values.help) {
    for (const line of help) io.out(line);
    return 0;
  }
  const { signal } = io;
  const root = process.getuid?.() === 0;
  const files = diskPluginFiles({
    name: values["plugin-name"],
    stateDir: values["plugin-state-dir"],
    socket: values["plugin-socket"],
  });
  const results: CheckResult[] = [];
  const report = (result: CheckResult) => {
    // A step cut short by Ctrl-C reads as a failure: none is reported.
    signal.throwIfAborted();
    results.push(result);
    if (!values.json) io.out(formatCheck(result));
  };
  const engine = await inspectEngine({ signal });
  report(engineCheck(engine));
  // cgroups before crun: no container may start on crun before its controllers are bound.
  report(await setUpCgroups({ engine, root, signal }));
  report(await setUpCrun({ engine, root, configPath: values.config, pidFile: values["pid-file"], signal }));
  report(await setUpDiskPlugin({ engine, root, files, signal }));
  const ok = allPassed(results);
  const changed = results.filter((result) => result.status === "changed").length;
  if (values.json) {
    io.out(JSON.stringify({ ok, changed, engine: engine.id, steps: results }));
  } else if (!ok) {
    io.out(`engine setup: ${results.filter((result) => !allPassed([result])).length} step(s) not in place`);
  } else {
    io.out(
      changed === 0
        ? "engine setup: everything in place, nothing changed"
        : `engine setup: done (${changed} changed)`,
    );
  }
  return ok ? 0 : 1;
}
