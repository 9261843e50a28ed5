import type { CommandExecutor, ExecutorProcessResult } from "./command-executor.ts";
import type { CommandResult } from "./sandbox-facade.ts";
import { oomCountScript } from "./sandbox-scripts.ts";

const textDecoder = new TextDecoder();

/**
 * Turns an executor's results into the facade's `CommandResult`s: text decoded, and `oomKilled` set on a command
 * killed with exit code 137 when the container's OOM-kill count went up since the last look (one count per
 * sandbox, so each kill is told once).
 */
export function createCommandResults(
  executor: CommandExecutor,
): (result: ExecutorProcessResult) => Promise<CommandResult> {
  let oomKillsSeen: number | undefined;

  async function oomKilledSince(): Promise<boolean> {
    try {
      const result = await executor
        .spawn({ argv: ["sh", "-c", oomCountScript], maxOutputBytes: 4096 })
        .wait();
      const match = /oom_kill (\d+)/.exec(textDecoder.decode(result.stdout));
      if (!match) return false;
      const count = Number(match[1]);
      const before = oomKillsSeen ?? 0;
      oomKillsSeen = count;
      return count > before;
    } catch {
      return false;
    }
  }

  return async (result) => {
    const { exitCode } = result;
    const out: CommandResult = {
      exitCode,
      stdout: textDecoder.decode(result.stdout),
      stderr: textDecoder.decode(result.stderr),
      durationMs: result.durationMs,
      terminationReason: result.terminationReason,
      truncated: result.truncated,
      omittedBytes: result.omittedBytes,
    };
    if (exitCode === 137 && result.terminationReason === "exit" && (await oomKilledSince())) {
      out.oomKilled = true;
    }
    return out;
  };
}
