import type { StoppedProcess } from "@pai/core";
import type { CommandExecutor } from "../command-executor.ts";
import { SandboxError } from "../sandbox-error.ts";

/**
 * Lists the sandbox user's processes (all but itself; zombies left out), then SIGKILLs every process it may signal
 * (`kill(-1)`: the sandbox user's, never the root agent or the container's init) until none is left, a few rounds
 * in case one forks meanwhile. Prints them as JSON, each command line on one line with its whitespace collapsed:
 * `[{ "pid": 12, "command": "python3 -m http.server" }]`.
 */
const program = String.raw`
import json, os, signal
me, uid = os.getpid(), os.getuid()
def others():
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, me):
            continue
        try:
            if os.stat("/proc/" + name).st_uid != uid:
                continue
            with open("/proc/" + name + "/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
            with open("/proc/" + name + "/cmdline", "rb") as f:
                command = f.read(4096).replace(b"\0", b" ")
        except (OSError, IndexError):
            continue
        found[int(name)] = " ".join(command.decode("utf-8", "replace").split())[:200]
    return found
listed = others()
for _ in range(8):
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if not others():
        break
print(json.dumps([{"pid": pid, "command": command} for pid, command in sorted(listed.items())]))
`;

/**
 * Stops every program running in a sandbox (servers a command left running, `nohup` jobs, a terminal's shell, the
 * code interpreter's contexts, which start again empty on their next call): what a rewind does before it restores
 * the workspace, so no program of the dropped turns writes into the restored files. Resolves to what was stopped.
 */
export async function stopSandboxProcesses(options: {
  executor: CommandExecutor;
  signal: AbortSignal;
}): Promise<StoppedProcess[]> {
  const process = options.executor.spawn({
    // -S -I: no site packages, no user or environment settings (as the checkpoint program).
    argv: ["python3", "-S", "-I", "-c", program],
    cwd: "/",
    signal: options.signal,
    timeoutMs: 30_000,
  });
  const result = await process.wait();
  const stdout = new TextDecoder().decode(result.stdout);
  if (result.exitCode !== 0) {
    const stderr = new TextDecoder().decode(result.stderr).trim().split("\n").slice(-3).join(" | ");
    throw new SandboxError(
      "CONTAINER_FAILED",
      `stopping the sandbox's processes ended with ${result.exitCode} (${result.terminationReason})${stderr ? `: ${stderr}` : ""}`,
      { details: { exitCode: result.exitCode } },
    );
  }
  return JSON.parse(stdout) as StoppedProcess[];
}
