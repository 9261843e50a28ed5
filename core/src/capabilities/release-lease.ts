import type { ThreadStore } from "../threads/thread-store.ts";
import type { ProvisionedResource } from "./capability-binding.ts";
import type { HeldLease } from "./lease-table.ts";

/** What {@link releaseLease} frees, and with which store and owner. */
export interface ReleaseLeaseOptions {
  store: ThreadStore;
  /** This process's owner id. */
  ownerId: string;
  lease: Pick<HeldLease, "capability" | "lifetime" | "key">;
  resource: ProvisionedResource;
}

/**
 * Frees a lease's resource and its record, unless the record now names another owner (this process was
 * presumed dead and the lease taken over): then it only lets go. A record naming another resource (another
 * process's, provisioned for the same key) stays: only this process's resource is freed.
 */
export async function releaseLease({ store, ownerId, lease, resource }: ReleaseLeaseOptions): Promise<void> {
  const [record] = await store
    .listLeases({ capability: lease.capability, lifetime: lease.lifetime, key: lease.key })
    .catch(() => []);
  const ours = record?.resourceId === resource.resourceId;
  if (record && ours && record.ownerId !== ownerId) {
    await resource.detach?.();
    return;
  }
  try {
    await resource.release();
  } finally {
    if (!record || ours) {
      await store.deleteLease(lease.capability, lease.lifetime, lease.key).catch(() => undefined);
    }
  }
}

/**
 * Ends each of `leases` (already dropped from this process's table) once its resource settled: `end` frees it or
 * lets it go. A lease whose provisioning failed has nothing to end; one `end` failing leaves the others ending.
 */
export async function endLeases(
  leases: readonly HeldLease[],
  end: (lease: HeldLease, resource: ProvisionedResource) => Promise<void>,
): Promise<void> {
  await Promise.allSettled(
    leases.map(async (lease) => {
      const resource = await lease.resource.catch(() => undefined);
      if (resource) await end(lease, resource);
    }),
  );
}
