import { createHash } from "node:crypto";
import type Docker from "dockerode";
import tar from "tar-stream";
import type { ContainerSpec, ResolvedContainerSpec } from "./container-spec.ts";

/** `localhost` for a container whose network the engine does not set up (it then writes no /etc/hosts). */
export const hostsFileContent = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";

/** The named volume holding {@link hostsFileContent}; its name carries the content's hash. */
export const hostsVolumeName = `pai-etc-${createHash("sha256").update(hostsFileContent).digest("hex").slice(0, 12)}`;

async function hostsArchive(): Promise<Buffer> {
  const pack = tar.pack();
  const content = Buffer.from(hostsFileContent);
  pack.entry(
    { name: "hosts", mode: 0o644, uid: 0, gid: 0, size: content.length, mtime: new Date(0) },
    content,
  );
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Makes sure the engine has the named volume {@link hostsVolumeName} with a `hosts` file, and returns that file's
 * path on the engine's host (for a read-only bind mount on `/etc/hosts`). The file goes in through the archive
 * API of a container that is never started (so remote engines work too), made from `image` and removed after.
 */
export async function ensureHostsFile(docker: Docker, image: string, signal?: AbortSignal): Promise<string> {
  const abort = signal ? { abortSignal: signal } : {};
  const volume = await docker.createVolume({
    Name: hostsVolumeName,
    Labels: { "pai.managed": "true", "pai.purpose": "hosts-file" },
    ...abort,
  });
  const helper = await docker.createContainer({
    Image: image,
    Cmd: ["true"],
    NetworkDisabled: true,
    Labels: { "pai.managed": "true", "pai.purpose": "hosts-file" },
    HostConfig: {
      NetworkMode: "none",
      Mounts: [{ Type: "volume", Source: hostsVolumeName, Target: "/pai-etc" }],
      LogConfig: { Type: "none", Config: {} },
    },
    ...abort,
  });
  try {
    await helper.putArchive(await hostsArchive(), { path: "/pai-etc", ...abort });
  } finally {
    await helper.remove({ force: true }).catch(() => undefined);
  }
  const { Mountpoint } = await volume.inspect(abort);
  return `${Mountpoint}/hosts`;
}

/**
 * The hosts file of a container whose network the engine does not set up: for network `none` when
 * `skipNoneNetworkSetup` (see `DockerDriverOptions`), the path {@link ensureHostsFile} gives, made once per engine
 * (again after a failure); `undefined` for any other container.
 */
export function createHostsFileSource(
  docker: Docker,
  skipNoneNetworkSetup: boolean,
): (spec: ContainerSpec | ResolvedContainerSpec, signal?: AbortSignal) => Promise<string | undefined> {
  let hostsFile: Promise<string> | undefined;
  return function hostsFileFor(spec, signal) {
    if (!skipNoneNetworkSetup || (spec.network ?? "none") !== "none") return Promise.resolve(undefined);
    hostsFile ??= ensureHostsFile(docker, spec.image, signal);
    hostsFile.catch(() => {
      hostsFile = undefined;
    });
    return hostsFile;
  };
}
