import { extname } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The `pai-disk` volume plugin's daemon, a script for Node: `node <path> [--socket <path>] [--state-dir <dir>]`
 * serves the plugin on the socket (default `/run/docker/plugins/pai-disk.sock`, where Docker finds it) until
 * SIGTERM. It runs as root on the engine's host; `pai engine setup` (`@pai/sandbox`) starts it. The path is the
 * compiled JavaScript in an installed package and the TypeScript source in the repository.
 */
export const diskVolumePluginEntryPath: string = fileURLToPath(
  new URL(`./run-disk-volume-plugin${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);
