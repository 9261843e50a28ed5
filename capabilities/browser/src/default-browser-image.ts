import { access, constants } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { execa } from "execa";

/** The tag every `images/build browser` run moves to the newest build. */
export const LATEST_BROWSER_IMAGE = "pai/browser:latest";

const buildScript = fileURLToPath(new URL("../../../images/build", import.meta.url));

/** The command's output, or `undefined` when it failed, took over 20 s or `signal` aborted it. */
async function run(file: string, args: readonly string[], signal?: AbortSignal): Promise<string | undefined> {
  const result = await execa(file, args, { timeout: 20_000, cancelSignal: signal, reject: false });
  return result.failed ? undefined : result.stdout.trim();
}

/**
 * The image `dockerBrowser()` runs when none is given: the content-hashed tag `images/build --print-tag browser`
 * prints (so a changed Dockerfile is noticed) when that image exists locally, else `pai/browser:latest`.
 */
export async function resolveDefaultBrowserImage(options: { signal?: AbortSignal } = {}): Promise<string> {
  try {
    await access(buildScript, constants.X_OK);
  } catch {
    return LATEST_BROWSER_IMAGE;
  }
  const tag = (await run(buildScript, ["--print-tag", "browser"], options.signal))?.split("\n").at(-1);
  if (!tag || !/^[\w./-]+:[\w.-]+$/.test(tag)) return LATEST_BROWSER_IMAGE;
  const id = await run("docker", ["image", "inspect", "--format", "{{.Id}}", tag], options.signal);
  return id ? tag : LATEST_BROWSER_IMAGE;
}
