import { posix } from "node:path";
import type { Readable } from "node:stream";
import type { ContainerDriver } from "@pai/pool";
import { packDirectory } from "./pack-directory.ts";
import type { FileScriptRunner } from "./run-file-script.ts";
import { SandboxError } from "./sandbox-error.ts";
import type { SandboxFacade, UploadResult } from "./sandbox-facade.ts";
import { directoryScript, scriptExit, uploadTargetScript } from "./sandbox-scripts.ts";
import { transformTar } from "./transform-tar.ts";
import { createUploadHeaderSanitizer } from "./upload-header-sanitizer.ts";
import { resolveWorkspacePath } from "./workspace-path.ts";

/** Options of {@link createSandboxArchives}. */
export interface SandboxArchivesOptions {
  /**
   * Resolves the directory inside the container (symlinks checked there; an upload's target is created) before
   * the archive API is used.
   */
  script: FileScriptRunner;
  /** The engine's archive API. */
  driver: ContainerDriver;
  containerId: string;
  workspace: string;
  /** Owner of uploaded files. */
  uid: number;
  /** Group of uploaded files. */
  gid: number;
}

const textDecoder = new TextDecoder();

/** The archive API names entries `<basename>/...`: names relative to the directory instead (its own entry dropped). */
function relativeTo(root: string): Parameters<typeof transformTar>[1] {
  return (header) => {
    const name = header.name.replace(/^\.\//, "");
    if (name === root || name === `${root}/`) return undefined;
    if (!name.startsWith(`${root}/`)) return undefined;
    const rest = name.slice(root.length + 1);
    const linkname =
      header.type === "link" && header.linkname?.startsWith(`${root}/`)
        ? header.linkname.slice(root.length + 1)
        : header.linkname;
    return { ...header, name: rest, linkname: linkname ?? null };
  };
}

/**
 * The sandbox facade's directory transfers, as tar streams through the engine's archive API (bulk bytes never
 * cross the agent): `uploadDirectory` (entries sanitized, written as the sandbox user) and `downloadDirectory`.
 */
export function createSandboxArchives(
  options: SandboxArchivesOptions,
): Pick<SandboxFacade, "uploadDirectory" | "downloadDirectory"> {
  const { script, driver, containerId, workspace } = options;

  return {
    async uploadDirectory(source, targetDirectory = ".", uploadOptions = {}): Promise<UploadResult> {
      const target = resolveWorkspacePath(targetDirectory, workspace);
      // Resolve (symlinks checked inside the container) and create the directory as the sandbox user, then
      // stream the sanitized archive through the engine's archive API.
      const prepared = await script(uploadTargetScript, [target], { signal: uploadOptions.signal });
      const resolved = textDecoder.decode(prepared.stdout);
      const sanitize = createUploadHeaderSanitizer({ uid: options.uid, gid: options.gid });
      // a host directory is packed with sanitized headers directly; a tar stream is rewritten entry by entry
      const sanitized =
        typeof source === "string"
          ? packDirectory(source, { ...uploadOptions, map: sanitize })
          : transformTar(source, sanitize);
      const done = sanitized.done;
      done.catch(() => {});
      try {
        await driver.putArchive(
          containerId,
          resolved,
          sanitized.stream,
          uploadOptions.signal ? { signal: uploadOptions.signal } : {},
        );
      } catch (error) {
        // The engine may stop reading without closing the stream: stop packing. The sanitizer's verdict (an entry
        // escaping the target) explains a broken upload best.
        sanitized.stream.destroy();
        await done;
        throw error;
      }
      const stats = await done;
      return { entries: stats.entries, bytes: stats.bytes };
    },

    async downloadDirectory(directory, downloadOptions = {}): Promise<Readable> {
      const target = resolveWorkspacePath(directory, workspace);
      const result = await script(directoryScript, [target], { signal: downloadOptions.signal });
      if (result.exitCode === scriptExit.missing) {
        throw new SandboxError("NOT_FOUND", `no directory ${directory} in the sandbox`, {
          details: { path: directory },
        });
      }
      const resolved = textDecoder.decode(result.stdout);
      const archive = await driver.getArchive(
        containerId,
        resolved,
        downloadOptions.signal ? { signal: downloadOptions.signal } : {},
      );
      return transformTar(archive, relativeTo(posix.basename(resolved))).stream;
    },
  };
}
