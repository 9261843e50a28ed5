/** Where a disk volume plugin of the engine's host keeps its socket, pid file, log and state. */
export interface DiskPluginFiles {
  /** The plugin's name: the volume driver containers name (`pai-disk`, the driver's default). */
  name: string;
  /** `/run/docker/plugins/<name>.sock`: where Docker finds a plugin of that name, whatever its exec root. */
  socket: string;
  pidFile: string;
  log: string;
  /** Disk images, their mount points and the volume records. */
  stateDir: string;
}

/**
 * The files of plugin `name` (those `scripts/docker-engine` used before `pai engine setup` took over, so either
 * finds the plugin the other started): `/run/docker/plugins/<name>.sock`, `/var/run/<name>-plugin.pid`,
 * `/var/log/<name>-plugin.log`, state in `stateDir` (default `/var/lib/<name>`).
 *
 * `socket` puts the socket elsewhere, where engines do not look (a plugin for tests): an engine keeps every plugin
 * it met in /run/docker/plugins until it restarts, and once that plugin's socket is gone, each look-up of a volume
 * it does not know waits ~15 s for it.
 */
export function diskPluginFiles(options: {
  name: string;
  stateDir?: string | undefined;
  socket?: string | undefined;
}): DiskPluginFiles {
  const { name } = options;
  return {
    name,
    socket: options.socket ?? `/run/docker/plugins/${name}.sock`,
    pidFile: `/var/run/${name}-plugin.pid`,
    log: `/var/log/${name}-plugin.log`,
    stateDir: options.stateDir ?? `/var/lib/${name}`,
  };
}
