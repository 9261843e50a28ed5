import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { SandboxError } from "../sandbox-error.ts";

/**
 * Registers runtime `crun` in an engine's configuration file (`daemon.json`: `"runtimes": { "crun": { "path" } }`),
 * creating the file or keeping everything else in it. A file that already names a `crun` runtime is left as it is.
 * The engine reads it when it starts, or on SIGHUP.
 *
 * @returns whether the file changed
 * @throws SandboxError `INVALID_ARGUMENT` when the file is not a JSON object
 */
export async function addCrunRuntime(options: { configPath: string; crunPath: string }): Promise<boolean> {
  const { configPath, crunPath } = options;
  let text = "";
  try {
    text = await readFile(configPath, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  let config: Record<string, unknown> = {};
  if (text.trim() !== "") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (cause) {
      throw new SandboxError("INVALID_ARGUMENT", `${configPath} is not valid JSON: fix it, then run again`, {
        cause,
        details: { configPath },
      });
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      throw new SandboxError("INVALID_ARGUMENT", `${configPath} does not hold a JSON object`, {
        details: { configPath },
      });
    }
    config = parsed as Record<string, unknown>;
  }
  const runtimes = (config.runtimes ?? {}) as Record<string, unknown>;
  if (Object.hasOwn(runtimes, "crun")) return false;
  config.runtimes = { ...runtimes, crun: { path: crunPath } };
  await mkdir(dirname(configPath), { recursive: true });
  // A whole file or none: the engine may read it at any moment.
  const temporary = `${configPath}.pai-${process.pid}`;
  await writeFile(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o644 });
  await rename(temporary, configPath);
  return true;
}
