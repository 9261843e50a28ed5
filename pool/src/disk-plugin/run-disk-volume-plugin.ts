// The `pai-disk` Docker volume plugin as a daemon, on the engine's host (`pai engine setup` starts it; its path is
// `diskVolumePluginEntryPath`):
//   node run-disk-volume-plugin.js [--socket /run/docker/plugins/pai-disk.sock] [--state-dir DIR]
import { parseArgs } from "node:util";
import { createDiskVolumePlugin } from "./disk-volume-plugin.ts";

const { values } = parseArgs({
  options: {
    socket: { type: "string", default: "/run/docker/plugins/pai-disk.sock" },
    "state-dir": { type: "string", default: "/var/lib/pai-disk" },
  },
});
const plugin = createDiskVolumePlugin({ stateDir: values["state-dir"] });
await plugin.listen(values.socket);
console.log(`pai-disk: serving ${values.socket} (state in ${values["state-dir"]})`);
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => {
    void plugin.close().finally(() => process.exit(0));
  });
}
