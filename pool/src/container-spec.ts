/** Resource limits of a container. */
export interface ContainerLimits {
  /**
   * Memory limit in bytes; swap is disabled (`MemorySwap` = `Memory`).
   * @default 536870912 (512 MiB)
   */
  memoryBytes?: number;
  /**
   * CPU quota in units of 1e-9 CPUs.
   * @default 1000000000 (one CPU)
   */
  nanoCpus?: number;
  /**
   * Maximum number of processes/threads.
   * @default 256
   */
  pidsLimit?: number;
  /**
   * `fsize` ulimit in bytes: the largest file a process may write (SIGXFSZ/EFBIG past it).
   * @default 1073741824 (1 GiB)
   */
  fsizeBytes?: number;
  /**
   * Disk of the container: everything its writable paths hold together (`/workspace` and `/tmp`), bounded by the
   * kernel — they share one small ext4 filesystem of this size (the engine's `pai-disk` volume plugin, started by
   * `npx pai engine setup`), so a write past it fails with ENOSPC and the host spends at most this much.
   * `null` leaves them plain local volumes, bounded only by the host's disk (for engines without the plugin).
   * @default 2147483648 (2 GiB)
   */
  diskBytes?: number | null;
}

/**
 * A Linux capability a container may keep (without the `CAP_` prefix). Only those a container's own supervisor
 * needs to run its programs as another user are offered: every other one stays dropped.
 */
export type ContainerCapability = "SETUID" | "SETGID" | "SETPCAP" | "KILL";

const containerCapabilities: ReadonlySet<string> = new Set<ContainerCapability>([
  "SETUID",
  "SETGID",
  "SETPCAP",
  "KILL",
]);

/**
 * What to run: image, command and the security/limit settings of every container of a pool.
 * The security settings that are not options here are always on: all capabilities dropped (but the few
 * `capabilities` names), `no-new-privileges`, `Init: true`, logging driver `none`.
 */
export interface ContainerSpec {
  /** Image reference, e.g. `pai/sandbox:latest`. It must exist locally; the pool never pulls. */
  image: string;
  /**
   * Command of the container's main process (it only has to stay alive; work runs through exec).
   * @default ["sleep", "infinity"]
   */
  cmd?: readonly string[];
  /** Overrides the image's entrypoint when set. */
  entrypoint?: readonly string[];
  /**
   * `uid:gid` (or a user name) the main process and, by default, every exec runs as.
   * @default "1000:1000"
   */
  user?: string;
  /**
   * Capabilities the container keeps out of the ones Docker grants (every other is dropped): for a main process
   * that runs as root only to start programs as an unprivileged user it cannot be signalled by (`SETUID`,
   * `SETGID`, `KILL`; `SETPCAP` to empty the programs' bounding set). A program that switches to another user
   * loses them; with `no-new-privileges` nothing it executes gains any.
   * @default [] (none)
   */
  capabilities?: readonly ContainerCapability[];
  /** Environment of the main process. */
  env?: Readonly<Record<string, string>>;
  /** @default "/workspace" */
  workingDir?: string;
  /** See {@link ContainerLimits} for the defaults. */
  limits?: ContainerLimits;
  /**
   * `none` (no interface but `lo`) or `host`. Never a bridge: engines here run with `--bridge=none`.
   * @default "none"
   */
  network?: "none" | "host";
  /** @default true */
  readOnlyRootfs?: boolean;
  /**
   * Paths that get an anonymous volume each (writable even with a read-only root, removed with the
   * container), all on one disk of `limits.diskBytes`. Volumes, not tmpfs: Docker's archive API does not work
   * on tmpfs mounts. A volume starts as a copy of the image's directory, owner and mode included, so the image
   * must create these paths with the right owner.
   * @default ["/workspace", "/tmp"]
   */
  writablePaths?: readonly string[];
  /** Size of `/dev/shm` in bytes (Chromium wants more than Docker's 64 MiB default). */
  shmSizeBytes?: number;
  /**
   * OCI runtime, by the name the engine registered it under (`docker info` → Runtimes), e.g. `crun` or `runc`.
   * @default the driver's choice: `crun` when the engine has it, else the engine's default runtime (runc)
   */
  runtime?: string;
  /**
   * Named volumes (e.g. an in-container agent copied onto the engine once), read-only unless `readOnly: false`.
   * They outlive the containers; whoever fills them owns them.
   */
  sharedVolumes?: readonly { name: string; target: string; readOnly?: boolean }[];
  /**
   * Directories of the engine's host, bind-mounted read-only (e.g. a directory of unix sockets the host process
   * serves, for an engine on this machine). A source that does not exist on the engine's host fails the create.
   */
  hostDirectories?: readonly { source: string; target: string }[];
  /** Extra labels. Keys starting with `pai.` are reserved for the pool. */
  labels?: Readonly<Record<string, string>>;
}

/** A {@link ContainerSpec} with every default filled in. Its JSON is what `specHash` hashes. */
export interface ResolvedContainerSpec {
  image: string;
  cmd: readonly string[];
  entrypoint: readonly string[] | null;
  user: string;
  /** Absent when there are none (so the hashes of specs without any stay as they were); sorted. */
  capabilities?: readonly ContainerCapability[];
  env: Readonly<Record<string, string>>;
  workingDir: string;
  limits: Required<Omit<ContainerLimits, "diskBytes">> & { diskBytes: number | null };
  network: "none" | "host";
  readOnlyRootfs: boolean;
  writablePaths: readonly string[];
  shmSizeBytes: number | null;
  /** `null`: the driver's choice. */
  runtime: string | null;
  sharedVolumes: readonly { name: string; target: string; readOnly: boolean }[];
  /** Absent when there are none (so the hashes of specs without any stay as they were). */
  hostDirectories?: readonly { source: string; target: string }[];
  labels: Readonly<Record<string, string>>;
}

/** Defaults applied by {@link resolveContainerSpec}. */
export const containerSpecDefaults = {
  cmd: ["sleep", "infinity"],
  user: "1000:1000",
  workingDir: "/workspace",
  limits: {
    memoryBytes: 512 * 1024 * 1024,
    nanoCpus: 1_000_000_000,
    pidsLimit: 256,
    fsizeBytes: 1024 ** 3,
    diskBytes: 2 * 1024 ** 3,
  },
  network: "none",
  readOnlyRootfs: true,
  writablePaths: ["/workspace", "/tmp"],
} as const;

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`ContainerSpec: ${name} must be a positive integer, got ${value}`);
  }
  return value;
}

function runtimeName(value: string | null): string | null {
  if (value !== null && !/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(value)) {
    throw new TypeError(`ContainerSpec: runtime must be a runtime name, got ${JSON.stringify(value)}`);
  }
  return value;
}

function capabilityList(values: readonly string[]): ContainerCapability[] {
  for (const value of values) {
    if (!containerCapabilities.has(value)) {
      throw new TypeError(
        `ContainerSpec: capabilities may name ${[...containerCapabilities].join(", ")}, not ${JSON.stringify(value)}`,
      );
    }
  }
  return [...new Set(values as readonly ContainerCapability[])].sort();
}

/** The smallest disk worth a filesystem (the `pai-disk` plugin refuses less). */
const minDiskBytes = 16 * 1024 * 1024;

function diskBytes(value: number): number {
  if (value < minDiskBytes) {
    throw new RangeError(
      `ContainerSpec: limits.diskBytes must be at least ${minDiskBytes} (16 MiB), got ${value}`,
    );
  }
  return value;
}

/**
 * Fills in the defaults of a {@link ContainerSpec} and checks it. Pure; idempotent on its own output.
 * @throws TypeError/RangeError for a spec that cannot be run (empty image, relative writable path, reserved label).
 */
export function resolveContainerSpec(spec: ContainerSpec | ResolvedContainerSpec): ResolvedContainerSpec {
  if (typeof spec.image !== "string" || spec.image.trim() === "") {
    throw new TypeError("ContainerSpec: image is required");
  }
  const network = spec.network ?? containerSpecDefaults.network;
  if (network !== "none" && network !== "host") {
    throw new TypeError(`ContainerSpec: network must be "none" or "host", got ${String(network)}`);
  }
  const writablePaths = [...(spec.writablePaths ?? containerSpecDefaults.writablePaths)];
  for (const path of writablePaths) {
    if (!path.startsWith("/") || path.split("/").includes("..")) {
      throw new TypeError(`ContainerSpec: writable path must be absolute, got ${path}`);
    }
  }
  const labels = { ...(spec.labels ?? {}) };
  for (const key of Object.keys(labels)) {
    if (key.startsWith("pai.")) throw new TypeError(`ContainerSpec: label ${key} is reserved for the pool`);
  }
  const limits = spec.limits ?? {};
  const defaults = containerSpecDefaults.limits;
  const cmd = [...(spec.cmd ?? containerSpecDefaults.cmd)];
  return {
    image: spec.image,
    cmd,
    entrypoint: spec.entrypoint ? [...spec.entrypoint] : null,
    user: spec.user ?? containerSpecDefaults.user,
    ...(spec.capabilities?.length ? { capabilities: capabilityList(spec.capabilities) } : {}),
    env: { ...(spec.env ?? {}) },
    workingDir: spec.workingDir ?? containerSpecDefaults.workingDir,
    limits: {
      memoryBytes: positiveInteger("limits.memoryBytes", limits.memoryBytes ?? defaults.memoryBytes),
      nanoCpus: positiveInteger("limits.nanoCpus", limits.nanoCpus ?? defaults.nanoCpus),
      pidsLimit: positiveInteger("limits.pidsLimit", limits.pidsLimit ?? defaults.pidsLimit),
      fsizeBytes: positiveInteger("limits.fsizeBytes", limits.fsizeBytes ?? defaults.fsizeBytes),
      diskBytes:
        limits.diskBytes === null
          ? null
          : diskBytes(positiveInteger("limits.diskBytes", limits.diskBytes ?? defaults.diskBytes)),
    },
    network,
    readOnlyRootfs: spec.readOnlyRootfs ?? containerSpecDefaults.readOnlyRootfs,
    writablePaths,
    runtime: runtimeName(spec.runtime ?? null),
    shmSizeBytes:
      spec.shmSizeBytes === undefined || spec.shmSizeBytes === null
        ? null
        : positiveInteger("shmSizeBytes", spec.shmSizeBytes),
    sharedVolumes: (spec.sharedVolumes ?? []).map((volume) => {
      if (!/^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/.test(volume.name) || !volume.target.startsWith("/")) {
        throw new TypeError(
          `ContainerSpec: shared volume ${volume.name} → ${volume.target} is not a volume name and an absolute path`,
        );
      }
      return { name: volume.name, target: volume.target, readOnly: volume.readOnly ?? true };
    }),
    ...(spec.hostDirectories?.length
      ? {
          hostDirectories: spec.hostDirectories.map((directory) => {
            for (const path of [directory.source, directory.target]) {
              if (!path.startsWith("/") || path.split("/").includes("..")) {
                throw new TypeError(`ContainerSpec: host directory paths must be absolute, got ${path}`);
              }
            }
            return { source: directory.source, target: directory.target };
          }),
        }
      : {}),
    labels,
  };
}
