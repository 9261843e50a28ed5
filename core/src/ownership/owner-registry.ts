import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { OwnerLiveness } from "../capabilities/capability-manager.ts";
import type { ThreadStore } from "../threads/thread-store.ts";

/** Options of {@link createOwnerRegistry}. */
export interface OwnerRegistryOptions {
  store: ThreadStore;
  /** This process's owner id. Unique per process: reuse one only once the process that had it is gone. @default `<hostname>:<pid>:<8 random hex>` */
  ownerId?: string;
  /** An owner whose last heartbeat is older than this is dead. @default 20000 */
  ownerTtlMs?: number;
}

/** This process as an owner in the store: its heartbeats, and which owners are alive (on any host). */
export interface OwnerRegistry extends OwnerLiveness {
  readonly ownerId: string;
  /** An owner whose last heartbeat is older than this is dead. */
  readonly ownerTtlMs: number;
  /** When this process started as an owner. */
  readonly startedAt: number;
  /** Records that this process is alive now. */
  heartbeat(): Promise<void>;
  /** Owners whose heartbeat is younger than `ownerTtlMs`, this process always included. */
  liveOwners(): Promise<ReadonlySet<string>>;
  /** Owners recorded in the store whose heartbeat is older than `ownerTtlMs` (never this process). */
  deadOwners(): Promise<ReadonlySet<string>>;
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

  return {
    ownerId,
    ownerTtlMs,
    startedAt,
    heartbeat: () =>
      store.heartbeatOwner({ ownerId, host, pid: process.pid, startedAt, heartbeatAt: Date.now() }),
    async liveOwners() {
      const now = Date.now();
      const live = new Set<string>([ownerId]);
      for (const owner of await store.listOwners()) {
        if (now - owner.heartbeatAt < ownerTtlMs) live.add(owner.ownerId);
      }
      return live;
    },
    async deadOwners() {
      const now = Date.now();
      const dead = new Set<string>();
      for (const owner of await store.listOwners()) {
        if (owner.ownerId !== ownerId && now - owner.heartbeatAt >= ownerTtlMs) dead.add(owner.ownerId);
      }
      return dead;
    },
    async forget(ownerIds) {
      for (const id of ownerIds) if (id !== ownerId) await store.removeOwner(id);
    },
    remove: () => store.removeOwner(ownerId),
  };
}
