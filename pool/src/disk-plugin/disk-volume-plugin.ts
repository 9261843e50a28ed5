import {
  mkdir,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  statfs,
  truncate,
  unlink,
  writeFile,
} from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { join } from "node:path";
import { execa } from "execa";

/** Runs a host tool (mkfs, cp, mount); rejects with its stderr when it fails. */
const run = (file: string, args: readonly string[]) => execa(file, args);

/** Options of {@link createDiskVolumePlugin}. */
export interface DiskVolumePluginOptions {
  /**
   * Where disk images, their mount points and the volume records live (on the engine's host).
   * @default "/var/lib/pai-disk"
   */
  stateDir?: string;
}

/** What `Get` reports in a volume's `Status` (Docker shows it in `GET /volumes/{name}`). */
export interface DiskVolumeStatus {
  /** The disk the volume lives on; volumes naming one disk share its filesystem and its bound. */
  disk: string;
  /** Size of the disk's filesystem as created. */
  sizeBytes: number;
  /** Bytes the disk's filesystem has in use (all of its volumes), from `statfs`. */
  usedBytes: number;
  /** Bytes still free for writing. */
  availableBytes: number;
}

/** A Docker volume plugin (legacy protocol) that bounds volumes with a small filesystem per disk. */
export interface DiskVolumePlugin {
  /** Answers one call of the protocol, e.g. `call("/VolumeDriver.Create", { Name, Opts })`. */
  call(path: string, body: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Serves the protocol on a unix socket; Docker finds `/run/docker/plugins/<driver name>.sock`. */
  listen(socketPath: string): Promise<void>;
  /** Stops serving. Mounted disks stay mounted: containers keep using them. */
  close(): Promise<void>;
}

interface VolumeRecord {
  name: string;
  disk: string;
  dir: string;
  sizeBytes: number;
}

const namePattern = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const minSizeBytes = 16 * 1024 * 1024;
const maxSizeBytes = 2 ** 40;
/**
 * ext4 without a journal (a sandbox's scratch disk does not outlive its host), no reserved blocks, one inode per
 * 8 KiB. Lazily initialised inode tables stay holes in the sparse image (`noinit_itable` on mount), so a fresh
 * disk costs ~1 MiB of host disk.
 */
const mkfsArgs = ["-q", "-F", "-t", "ext4", "-O", "^has_journal", "-m", "0", "-i", "8192"];
const mkfsExtended = "lazy_itable_init=1,nodiscard";
/** `discard` gives freed blocks back to the host (the loop device punches holes in the image). */
const mountOptions = "loop,nosuid,nodev,noatime,discard,noinit_itable";

class PluginError extends Error {}

function checkName(kind: string, value: unknown): string {
  if (typeof value !== "string" || !namePattern.test(value)) {
    throw new PluginError(`invalid ${kind}: ${JSON.stringify(value)}`);
  }
  return value;
}

function parseSize(value: unknown): number {
  const size = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(size) || size < minSizeBytes || size > maxSizeBytes) {
    throw new PluginError(`option size must be a byte count from ${minSizeBytes} to ${maxSizeBytes}`);
  }
  return size;
}

/**
 * The engine-side half of `limits.diskBytes`: a Docker volume plugin that gives each *disk* its own ext4
 * filesystem in a sparse image file, loop-mounted on the engine's host, so the kernel bounds everything its volumes
 * hold (a write past it fails with ENOSPC) and the host spends only what is written. Every writable path of one
 * container names the same disk (`disk` option) and gets a directory of it (`dir`), so the bound covers them
 * together. A disk is unmounted and its image deleted when its last volume is removed.
 *
 * Volume options: `size` (bytes, required), `disk` (default: the volume's name), `dir` (default `data`).
 *
 * @example
 * const plugin = createDiskVolumePlugin({ stateDir: "/var/lib/pai-disk" });
 * await plugin.listen("/run/docker/plugins/pai-disk.sock");
 * // docker run --mount type=volume,dst=/workspace,volume-driver=pai-disk,volume-opt=size=2147483648 ...
 */
export function createDiskVolumePlugin(options: DiskVolumePluginOptions = {}): DiskVolumePlugin {
  const stateDir = options.stateDir ?? "/var/lib/pai-disk";
  const volumesDir = join(stateDir, "volumes");
  const disksDir = join(stateDir, "disks");
  const templatesDir = join(stateDir, "templates");
  const volumes = new Map<string, VolumeRecord>();
  let loaded: Promise<void> | undefined;
  let server: Server | undefined;
  /** Creates, removes and mounts run one at a time: loop device set-up is not safe to race. */
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(operation: () => Promise<T>): Promise<T> => {
    const next = queue.then(operation, operation);
    queue = next.catch(() => undefined);
    return next;
  };

  const diskDir = (disk: string) => join(disksDir, disk);
  const mountDir = (disk: string) => join(diskDir(disk), "mnt");
  const volumePath = (record: VolumeRecord) => join(mountDir(record.disk), record.dir);

  function load(): Promise<void> {
    loaded ??= (async () => {
      await Promise.all([volumesDir, disksDir, templatesDir].map((dir) => mkdir(dir, { recursive: true })));
      for (const file of await readdir(volumesDir)) {
        if (!file.endsWith(".json")) continue;
        const record = JSON.parse(await readFile(join(volumesDir, file), "utf8")) as VolumeRecord;
        volumes.set(record.name, record);
      }
    })();
    return loaded;
  }

  async function isMounted(disk: string): Promise<boolean> {
    const [inner, outer] = await Promise.all([
      stat(mountDir(disk)).catch(() => undefined),
      stat(diskDir(disk)).catch(() => undefined),
    ]);
    return inner !== undefined && outer !== undefined && inner.dev !== outer.dev;
  }

  /** A formatted, empty image of `sizeBytes`, made once per size and copied (sparsely) for each disk. */
  async function template(sizeBytes: number): Promise<string> {
    const path = join(templatesDir, `ext4-${sizeBytes}.img`);
    if (await stat(path).catch(() => undefined)) return path;
    const partial = `${path}.${process.pid}.partial`;
    await writeFile(partial, "");
    await truncate(partial, sizeBytes);
    await run("mkfs.ext4", [...mkfsArgs, "-E", mkfsExtended, partial]);
    await rename(partial, path);
    return path;
  }

  /** Makes (or, after a host restart, re-mounts) the disk's filesystem. */
  async function ensureDisk(disk: string, sizeBytes: number): Promise<void> {
    const image = join(diskDir(disk), "disk.img");
    const existing = await stat(image).catch(() => undefined);
    if (existing && existing.size !== sizeBytes) {
      throw new PluginError(`disk ${disk} exists with size ${existing.size}, not ${sizeBytes}`);
    }
    if (await isMounted(disk)) return;
    await mkdir(mountDir(disk), { recursive: true });
    if (!existing) {
      await run("cp", ["--sparse=always", await template(sizeBytes), `${image}.partial`]);
      await rename(`${image}.partial`, image);
    }
    await run("mount", ["-t", "ext4", "-o", mountOptions, image, mountDir(disk)]);
  }

  async function dropDisk(disk: string): Promise<void> {
    if (await isMounted(disk)) {
      // A lazy unmount still frees the loop device (autoclear) once the last user lets go.
      await run("umount", [mountDir(disk)]).catch(() => run("umount", ["-l", mountDir(disk)]));
    }
    await rm(diskDir(disk), { recursive: true, force: true });
  }

  async function create(body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const name = checkName("volume name", body.Name);
    const opts = (body.Opts ?? {}) as Record<string, unknown>;
    const sizeBytes = parseSize(opts.size);
    const disk = checkName("disk", opts.disk ?? name);
    const dir = checkName("dir", opts.dir ?? "data");
    for (const key of Object.keys(opts)) {
      if (!["size", "disk", "dir"].includes(key)) throw new PluginError(`unknown option ${key}`);
    }
    return serial(async () => {
      const existing = volumes.get(name);
      if (existing) {
        if (existing.disk === disk && existing.dir === dir && existing.sizeBytes === sizeBytes) return {};
        throw new PluginError(`volume ${name} exists with other options`);
      }
      for (const other of volumes.values()) {
        if (other.disk === disk && other.dir === dir) {
          throw new PluginError(`directory ${dir} of disk ${disk} belongs to volume ${other.name}`);
        }
      }
      await ensureDisk(disk, sizeBytes);
      const record: VolumeRecord = { name, disk, dir, sizeBytes };
      try {
        // Empty, so Docker copies the image's directory (content, owner and mode) into it on first use.
        await mkdir(volumePath(record));
        await writeFile(join(volumesDir, `${name}.json`), JSON.stringify(record));
      } catch (error) {
        if (![...volumes.values()].some((other) => other.disk === disk)) await dropDisk(disk);
        throw error;
      }
      volumes.set(name, record);
      return {};
    });
  }

  function recordOf(body: Record<string, unknown>): VolumeRecord {
    const name = checkName("volume name", body.Name);
    const record = volumes.get(name);
    if (!record) throw new PluginError(`no such volume: ${name}`);
    return record;
  }

  async function remove(body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const record = recordOf(body);
    return serial(async () => {
      if (volumes.get(record.name) !== record) return {};
      volumes.delete(record.name);
      await unlink(join(volumesDir, `${record.name}.json`)).catch(() => undefined);
      // The directory goes with its disk: no walk through its files while the disk's other volumes live.
      if (![...volumes.values()].some((other) => other.disk === record.disk)) await dropDisk(record.disk);
      return {};
    });
  }

  async function status(record: VolumeRecord): Promise<DiskVolumeStatus | undefined> {
    if (!(await isMounted(record.disk))) return undefined;
    const fs = await statfs(mountDir(record.disk));
    const usedBytes = (fs.blocks - fs.bfree) * fs.bsize;
    return {
      disk: record.disk,
      sizeBytes: record.sizeBytes,
      usedBytes,
      availableBytes: fs.bavail * fs.bsize,
    };
  }

  async function call(path: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    try {
      await load();
      switch (path) {
        case "/Plugin.Activate":
          return { Implements: ["VolumeDriver"] };
        case "/VolumeDriver.Capabilities":
          return { Capabilities: { Scope: "local" } };
        case "/VolumeDriver.Create":
          return await create(body);
        case "/VolumeDriver.Remove":
          return await remove(body);
        case "/VolumeDriver.Mount": {
          const record = recordOf(body);
          await serial(() => ensureDisk(record.disk, record.sizeBytes));
          return { Mountpoint: volumePath(record) };
        }
        case "/VolumeDriver.Unmount":
          recordOf(body);
          return {};
        case "/VolumeDriver.Path": {
          const record = recordOf(body);
          return { Mountpoint: (await isMounted(record.disk)) ? volumePath(record) : "" };
        }
        case "/VolumeDriver.Get": {
          const record = recordOf(body);
          const mounted = await isMounted(record.disk);
          return {
            Volume: {
              Name: record.name,
              Mountpoint: mounted ? volumePath(record) : "",
              Status: (await status(record)) ?? { disk: record.disk, sizeBytes: record.sizeBytes },
            },
          };
        }
        case "/VolumeDriver.List":
          return {
            Volumes: await Promise.all(
              [...volumes.values()].map(async (record) => ({
                Name: record.name,
                Mountpoint: (await isMounted(record.disk)) ? volumePath(record) : "",
              })),
            ),
          };
        default:
          throw new PluginError(`unknown call ${path}`);
      }
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return { Err: error instanceof PluginError ? message : `pai-disk: ${message}` };
    }
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of request) {
      size += (chunk as Buffer).length;
      if (size > 1024 * 1024) {
        response.writeHead(413).end();
        return;
      }
      chunks.push(chunk as Buffer);
    }
    let body: Record<string, unknown> = {};
    const text = Buffer.concat(chunks).toString("utf8").trim();
    if (text !== "") {
      try {
        const parsed: unknown = JSON.parse(text);
        if (parsed && typeof parsed === "object") body = parsed as Record<string, unknown>;
      } catch {
        response.writeHead(400, { "content-type": "application/json" }).end('{"Err":"invalid JSON"}');
        return;
      }
    }
    const result = await call(request.url ?? "", body);
    response
      .writeHead(200, { "content-type": "application/vnd.docker.plugins.v1.2+json" })
      .end(JSON.stringify(result));
  }

  return {
    call,
    async listen(socketPath) {
      await load();
      await rm(socketPath, { force: true });
      server = createServer((request, response) => {
        handle(request, response).catch(() => response.destroy());
      });
      await new Promise<void>((resolve, reject) => {
        server?.once("error", reject);
        server?.listen(socketPath, () => resolve());
      });
    },
    async close() {
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      await queue;
    },
  };
}
