import { allPassed, type CheckResult, formatCheck } from "./check-result.ts";
import type { CliIo } from "./cli-io.ts";
import { type DiskPluginFiles, diskPluginFiles } from "./disk-plugin-files.ts";
import { diskPluginStatus } from "./disk-plugin-status.ts";
import { engineCheck } from "./engine-check.ts";
import { imagesCheck } from "./images-check.ts";
import { type EngineTarget, inspectEngine } from "./inspect-engine.ts";
import { parseCliOptions } from "./parse-cli-options.ts";
import { shippedAgent } from "./shipped-agent.ts";

const synopsis = "usage: pai doctor [options]";
const help = [
  synopsis,
  "",
  "Checks what PAI's sandboxes need from the Docker engine (DOCKER_HOST, or the default socket), one line per",
  "check: OK, or the problem and its fix. Changes nothing. Exit code 0 when every check passes.",
  "",
  "  --plugin-name <name>     the disk volume plugin sandboxes use (default pai-disk)",
  "  --plugin-socket <path>   its socket (default /run/docker/plugins/<name>.sock)",
  "  --json                   one JSON object instead of lines",
];

const options = {
  "plugin-name": { type: "string", default: "pai-disk" },
  "plugin-socket": { type: "string" },
  json: { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
} as const;

const noEngine = (check: string): CheckResult => ({
  check,
  status: "skipped",
  message: "needs an engine that answers",
});

/** Where to run the command that fixes an engine: here, or on the engine's own host. */
const setupHere = (engine: EngineTarget) =>
  engine.local
    ? "run `npx pai engine setup` as root"
    : `run \`npx pai engine setup\` as root on ${engine.info?.hostname}`;

function runtimeCheck(engine: EngineTarget): CheckResult {
  const check = "runtime";
  if (engine.info === undefined) return noEngine(check);
  if (engine.info.runtimes.includes("crun")) {
    return { check, status: "ok", message: "crun registered: sandboxes start on crun" };
  }
  return {
    check,
    status: "failed",
    message: `the engine has no runtime crun: sandboxes start on ${engine.info.defaultRuntime} (slower cold starts)`,
    fix: setupHere(engine),
  };
}

async function diskPluginCheck(
  engine: EngineTarget,
  files: DiskPluginFiles,
  signal: AbortSignal,
): Promise<CheckResult> {
  const check = "disk plugin";
  const fix = `${setupHere(engine)}, or set limits: { diskBytes: null } for sandboxes without a disk bound`;
  if (engine.local) {
    const status = await diskPluginStatus({ files, signal });
    return status.running
      ? { check, status: "ok", message: status.detail }
      : {
          check,
          status: "failed",
          message: `${status.detail}: sandboxes with a disk bound (limits.diskBytes) cannot start`,
          fix,
        };
  }
  if (engine.info === undefined) return noEngine(check);
  return engine.info.volumePlugins.includes(files.name)
    ? { check, status: "ok", message: `${files.name} loaded by the engine on ${engine.info.hostname}` }
    : {
        check,
        status: "failed",
        message: `the engine on ${engine.info.hostname} has not loaded ${files.name}: sandboxes with a disk bound (limits.diskBytes) cannot start`,
        fix,
      };
}

async function agentCheck(engine: EngineTarget): Promise<CheckResult> {
  const check = "agent";
  if (engine.info === undefined) return noEngine(check);
  const { architecture } = engine.info;
  const agent = await shippedAgent(architecture);
  return "path" in agent
    ? {
        check,
        status: "ok",
        message: `@pai/container-agent has pai-agent for ${architecture} (${agent.path})`,
      }
    : {
        check,
        status: "failed",
        message: `sandboxes cannot run commands on this ${architecture} engine: ${agent.missing}`,
      };
}

/**
 * `pai doctor`: checks the engine (reachable, runtime, disk plugin, an agent for its architecture, PAI's images
 * there and current), one line per check (`OK`, or `FAIL` with the fix; `SKIP` for checks that need an engine that
 * does not answer). Exit code 0 when every check passes, 1 otherwise, 2 for bad usage.
 */
export async function doctorCommand(args: readonly string[], io: CliIo): Promise<number> {
  const values = parseCliOptions({ args, options, usage: synopsis, io });
  if (values === undefined) return 2;
  if (values.help) {
    for (const line of help) io.out(line);
    return 0;
  }
  const { signal } = io;
  const files = diskPluginFiles({ name: values["plugin-name"], socket: values["plugin-socket"] });
  const engine = await inspectEngine({ signal });
  const results: CheckResult[] = [
    engineCheck(engine),
    runtimeCheck(engine),
    await diskPluginCheck(engine, files, signal),
    await agentCheck(engine),
    ...(await imagesCheck(engine, signal)),
  ];
  // A check cut short by Ctrl-C reads as a failure: none is reported.
  signal.throwIfAborted();
  const ok = allPassed(results);
  if (values.json) {
    io.out(JSON.stringify({ ok, engine: engine.id, checks: results }));
  } else {
    for (const result of results) io.out(formatCheck(result));
  }
  return ok ? 0 : 1;
}
