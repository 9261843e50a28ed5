import { posix } from "node:path";
import type { Header } from "tar-stream";
import { SandboxError } from "./sandbox-error.ts";
import type { TarHeaderInput } from "./transform-tar.ts";

/** Options of {@link createUploadHeaderSanitizer}. */
export interface UploadHeaderSanitizerOptions {
  /** Owner written into every entry. @default 1000 */
  uid?: number;
  /** Group written into every entry. @default 1000 */
  gid?: number;
}

/**
 * A `transformTar` mapper for archives from outside: names must be relative and stay inside (`..` or an absolute
 * name fails with `PATH_OUTSIDE_WORKSPACE`), no entry may be written through a symlink the same archive made,
 * only files, directories, symlinks and in-archive hard links pass (anything else fails with
 * `INVALID_ARGUMENT`), owners become the sandbox user and setuid/setgid/sticky bits are dropped.
 */
export function createUploadHeaderSanitizer(
  options: UploadHeaderSanitizerOptions = {},
): (header: Header) => TarHeaderInput | undefined {
  const uid = options.uid ?? 1000;
  const gid = options.gid ?? 1000;
  const symlinks = new Set<string>();

  const clean = (raw: string, what: string): string => {
    if (raw.includes("\0")) throw new SandboxError("INVALID_ARGUMENT", `${what} contains a NUL byte`);
    if (raw.startsWith("/")) {
      throw new SandboxError("PATH_OUTSIDE_WORKSPACE", `${what} ${raw} is absolute`, {
        details: { name: raw },
      });
    }
    const parts = raw.split("/").filter((part) => part !== "" && part !== ".");
    if (parts.includes("..")) {
      throw new SandboxError("PATH_OUTSIDE_WORKSPACE", `${what} ${raw} leaves the target directory`, {
        details: { name: raw },
      });
    }
    return parts.join("/");
  };

  const throughSymlink = (name: string): boolean => {
    let parent = posix.dirname(name);
    while (parent !== "." && parent !== "/") {
      if (symlinks.has(parent)) return true;
      parent = posix.dirname(parent);
    }
    return false;
  };

  return (header) => {
    const name = clean(header.name, "tar entry");
    if (name === "") return undefined; // the archive's root directory itself
    if (throughSymlink(name)) {
      throw new SandboxError("PATH_OUTSIDE_WORKSPACE", `tar entry ${name} is written through a symlink`, {
        details: { name },
      });
    }
    const type = header.type === "contiguous-file" ? "file" : header.type;
    const base = {
      uid,
      gid,
      uname: "",
      gname: "",
      mtime: header.mtime ?? new Date(),
    };
    switch (type) {
      case "file":
        symlinks.delete(name);
        return { ...base, name, type, size: header.size ?? 0, mode: (header.mode ?? 0o644) & 0o777 };
      case "directory":
        symlinks.delete(name);
        return { ...base, name, type, mode: ((header.mode ?? 0o755) & 0o777) | 0o700 };
      case "symlink":
        symlinks.add(name);
        return { ...base, name, type, linkname: header.linkname ?? "", mode: 0o777 };
      case "link": {
        const target = clean(header.linkname ?? "", "hard link target");
        if (target === "" || throughSymlink(`${target}/x`)) {
          throw new SandboxError("INVALID_ARGUMENT", `hard link ${name} has an invalid target`, {
            details: { name, linkname: header.linkname },
          });
        }
        return { ...base, name, type, linkname: target, mode: (header.mode ?? 0o644) & 0o777 };
      }
      default:
        throw new SandboxError("INVALID_ARGUMENT", `tar entry ${name} has unsupported type ${String(type)}`, {
          details: { name, type },
        });
    }
  };
}
