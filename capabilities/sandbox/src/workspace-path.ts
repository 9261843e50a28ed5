import { posix } from "node:path";
import { SandboxError } from "./sandbox-error.ts";

/**
 * Resolves `path` lexically against `workspace` (relative paths are inside it) and refuses one that leaves
 * it with `SandboxError('PATH_OUTSIDE_WORKSPACE')`. Symlinks are not looked at here: the container checks the
 * result with `realpath` before using it.
 *
 * @example
 * resolveWorkspacePath("src/../a.txt", "/workspace"); // "/workspace/a.txt"
 * resolveWorkspacePath("../etc/passwd", "/workspace"); // throws PATH_OUTSIDE_WORKSPACE
 */
export function resolveWorkspacePath(path: string, workspace: string): string {
  if (typeof path !== "string") {
    throw new SandboxError("INVALID_ARGUMENT", `a path must be a string, got ${typeof path}`);
  }
  if (path.includes("\0")) {
    throw new SandboxError("INVALID_ARGUMENT", "a path must not contain NUL bytes", { details: { path } });
  }
  const absolute = posix.normalize(path.startsWith("/") ? path : posix.join(workspace, path || "."));
  const resolved = absolute.length > 1 && absolute.endsWith("/") ? absolute.slice(0, -1) : absolute;
  if (resolved !== workspace && !resolved.startsWith(`${workspace}/`)) {
    throw new SandboxError("PATH_OUTSIDE_WORKSPACE", `${path} is outside the workspace ${workspace}`, {
      details: { path, workspace },
    });
  }
  return resolved;
}

/** Resolves a working directory: relative to `workspace`, absolute ones as they are (commands may `cd` anywhere). */
export function resolveWorkingDirectory(cwd: string, workspace: string): string {
  if (cwd.includes("\0")) {
    throw new SandboxError("INVALID_ARGUMENT", "a path must not contain NUL bytes", { details: { cwd } });
  }
  return posix.normalize(cwd.startsWith("/") ? cwd : posix.join(workspace, cwd || "."));
}
