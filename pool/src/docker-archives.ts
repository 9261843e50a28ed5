import { Readable } from "node:stream";
import type Docker from "dockerode";
import type { ContainerDriver } from "./container-driver.ts";
import { abortOption, dockerCall } from "./docker-call.ts";

/** The archive calls of a {@link ContainerDriver}: what {@link createDockerArchives} makes. */
export type DockerArchives = Pick<ContainerDriver, "putArchive" | "getArchive">;

/** Tar streams into and out of a container on the Docker engine (`PUT`/`GET /containers/{id}/archive`). */
export function createDockerArchives(docker: Docker): DockerArchives {
  return {
    putArchive(id, path, tar, callOptions = {}) {
      return dockerCall(
        "put archive",
        { containerId: id, path },
        async () => {
          const file = tar instanceof Readable ? tar : Buffer.from(tar);
          await docker.getContainer(id).putArchive(file as unknown as string, {
            path,
            ...abortOption(callOptions.signal),
          });
        },
        callOptions.signal,
      );
    },

    getArchive(id, path, callOptions = {}) {
      return dockerCall(
        "get archive",
        { containerId: id, path },
        async () => {
          const stream = await docker
            .getContainer(id)
            .getArchive({ path, ...abortOption(callOptions.signal) });
          return stream as unknown as Readable;
        },
        callOptions.signal,
      );
    },
  };
}
