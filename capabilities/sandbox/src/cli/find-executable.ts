import { access, constants } from "node:fs/promises";
import { delimiter, join } from "node:path";

/** Folders of system tools that a user's PATH often lacks (`mkfs.ext4`, `losetup` live there). */
const systemFolders = ["/usr/local/sbin", "/usr/sbin", "/sbin"];

/**
 * The path of executable `name`, looked up like a shell's `command -v` in `PATH` and then the system folders;
 * `undefined` when there is none.
 */
export async function findExecutable(name: string): Promise<string | undefined> {
  const folders = [...(process.env.PATH ?? "").split(delimiter).filter(Boolean), ...systemFolders];
  for (const folder of folders) {
    const path = join(folder, name);
    try {
      await access(path, constants.X_OK);
      return path;
    } catch {}
  }
  return undefined;
}
