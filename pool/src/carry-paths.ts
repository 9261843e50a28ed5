import type { ContainerDriver } from "./container-driver.ts";
import { PoolError } from "./pool-error.ts";

/** One end of a copy between containers: a container on the engine `driver` talks to. */
export interface ContainerOnEngine {
  driver: ContainerDriver;
  containerId: string;
}

/**
 * Copies what each folder of `folders` (absolute paths) holds from one container into the same folder of another,
 * through the engines' archive API: owners, modes and links travel in the tar stream, a read-only root is no
 * obstacle (the tar unpacks inside the folder), and a stopped source works too (the engine mounts its
 * filesystem and volumes for the copy). A folder missing in the source is skipped.
 * @throws PoolError what the drivers throw (`DOCKER_UNAVAILABLE`, `CONTAINER_FAILED`, e.g. the target's disk full)
 */
export async function carryPaths(
  from: ContainerOnEngine,
  to: ContainerOnEngine,
  folders: readonly string[],
  signal?: AbortSignal,
): Promise<void> {
  const options = signal ? { signal } : {};
  for (const folder of folders) {
    let tar: Awaited<ReturnType<ContainerDriver["getArchive"]>>;
    try {
      // `<folder>/.`: the folder's entries as `./…`, not the folder itself (whose parent may be read-only)
      tar = await from.driver.getArchive(from.containerId, `${folder.replace(/\/+$/, "")}/.`, options);
    } catch (error) {
      if (PoolError.hasCode(error, "NOT_FOUND")) continue;
      throw error;
    }
    await to.driver.putArchive(to.containerId, folder, tar, options);
  }
}
