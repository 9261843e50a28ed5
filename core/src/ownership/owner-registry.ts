import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { OwnerLiveness } from "../capabilities/owner-liveness.ts";
import type { OwnerRecord, ThreadStore } from "../threads/thread-store.ts";
import { createLocalProcessProbe, type LocalProcessProbe } from "./local-process-probe.ts";

/** Options of {@link createOwnerRegistry}. */
export interface OwnerRegistryOptions {
  store: ThreadStore;
  /** This process's owner id. Unique per process: reuse one only once the process that had it is gone. @default `<hostname>:<pid>:<8 random hex>` */
  ownerId?: string;
  /** An owner whose last heartbeat is older than this is dead. @default 20000 */
  ownerTtlMs?: number;
  /** Tells whether a process on this machine is gone. @default the probe of this process's `/proc` */
  probe?: LocalProcessProbe;
}

/**
 * This process as an owner in the store: its heartbeats, and which owners are alive. An owner is dead once its
 * heartbeat is older than `ownerTtlMs` (on any host), and at once when it ran on this machine, in this process's pid
 * namespace, and its process is gone (see `LocalProcessProbe`).
 */
export interface OwnerRegistry extends OwnerLiveness {
  readonly ownerId: string;
  /** An owner whose last heartbeat is older than this is dead. */
  readonly ownerTtlMs: number;
  /** When this process started as an owner. */
  readonly startedAt: number;
  /** Records that this process is alive now (with where it runs, for the processes on its machine). */
  heartbeat(): Promise<void>;
  /** Owners whose heartbeat is younger than `ownerTtlMs` and whose process is not known gone, this one included. */
  liveOwners(): Promise<ReadonlySet<string>>;
  /** Owners recorded in the store whose heartbeat is older than `ownerTtlMs` or whose process is gone (never this one). */
  deadOwners(): Promise<ReadonlySet<string>>;
  /**
   * Owners recorded in the store whose process is gone, seen from this machine (never this process): dead for certain
   * whatever their heartbeat says, so what they held (their threads' leases) may be freed at once.
   */
  goneOwners(): Promise<ReadonlySet<string>>;
  /**
   * Deletes the records of these dead owners, once their runs, leases and resources have been dealt with: from
   * then on they are unknown, and no reaper touches what they labelled.
   */
  forget(ownerIds: Iterable<string>): Promise<void>;
  /** Removes this process's record: from now on it counts as dead (a clean close). */
  remove(): Promise<void>;
}

/** The default owner id: `<hostname>:<pid>:<8 random hex>`. */
export function defaultOwnerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`;
}

/** Creates the owner registry of one runtime process (no timers: the runtime's maintenance drives it). */
export function createOwnerRegistry(options: OwnerRegistryOptions): OwnerRegistry {
  const { store } = options;
  const ownerId = options.ownerId ?? defaultOwnerId();
  const ownerTtlMs = options.ownerTtlMs ?? 20_000;
  const startedAt = Date.now();
  const host = hostname();
  const probe = options.probe ?? createLocalProcessProbe();

  /** The other owners in the store, each with whether its heartbeat is stale and whether its process is gone. */
  async function judged(): Promise<Array<{ owner: OwnerRecord; stale: boolean; gone: boolean }>> {
    const now = Date.now();
    const others = (await store.listOwners()).filter((owner) => owner.ownerId !== ownerId);
    return Promise.all(
      others.map(async (owner) => ({
        owner,
        stale: now - owner.heartbeatAt >= ownerTtlMs,
        gone: await probe.isGone(owner),
      })),
    );
  }

  return {
    ownerId,
    ownerTtlMs,
    startedAt,
    heartbeat: () =>
      store.heartbeatOwner({
        ownerId,
        host,
        pid: process.pid,
        startedAt,
        heartbeatAt: Date.now(),
        ...probe.place,
      }),
    async liveOwners() {
      const live = new Set<string>([ownerId]);
      for (const { owner, stale, gone } of await judged()) if (!stale && !gone) live.add(owner.ownerId);
      return live;
    },
    async deadOwners() {
      const dead = new Set<string>();
      for (const { owner, stale, gone } of await judged()) if (stale || gone) dead.add(owner.ownerId);
      return dead;
    },
    async goneOwners() {
      const gone = new Set<string>();
      for (const judgement of await judged()) if (judgement.gone) gone.add(judgement.owner.ownerId);
      return gone;
    },
    async forget(ownerIds) {
      for (const id of ownerIds) if (id !== ownerId) await store.removeOwner(id);
    },
    remove: () => store.removeOwner(ownerId),
  };
}
