import { asStored, parseStoreInput, storeInputSchemas as schemas } from "../parse-store-input.ts";
import type { CapabilityLifetime } from "../thread-store.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import { assertOpen, copy, type MemoryTables } from "./memory-tables.ts";
import { byCreatedAt } from "./record-order.ts";

/** The memory store's capability leases and their handovers between owners. */
export function memoryLeaseMethods(tables: MemoryTables): ThreadStoreParts["leases"] {
  const { leases } = tables;
  return {
    async putLease(input) {
      assertOpen(tables);
      const lease = asStored(parseStoreInput(schemas.lease, input, "lease"), "lease");
      leases.set(leaseKey(lease.capability, lease.lifetime, lease.key), lease);
    },

    async listLeases(input = {}) {
      assertOpen(tables);
      const query = parseStoreInput(schemas.leaseQuery, input, "lease query");
      return copy(
        [...leases.values()]
          .filter(
            (lease) =>
              (query.capability === undefined || lease.capability === query.capability) &&
              (query.lifetime === undefined || lease.lifetime === query.lifetime) &&
              (query.key === undefined || lease.key === query.key),
          )
          .sort(byCreatedAt),
      );
    },

    async touchLease(capability, lifetime, key, at) {
      assertOpen(tables);
      const lastUsedAt = parseStoreInput(schemas.timestamp, at, "lease time");
      const lease = leases.get(leaseKey(capability, lifetime, key));
      if (lease) lease.lastUsedAt = lastUsedAt;
    },

    async deleteLease(capability, lifetime, key) {
      assertOpen(tables);
      leases.delete(leaseKey(capability, lifetime, key));
    },

    async claimLease(capability, lifetime, key, input) {
      assertOpen(tables);
      const { from, to } = parseStoreInput(schemas.leaseOwners, input, "lease owners");
      const id = leaseKey(capability, lifetime, key);
      const lease = leases.get(id);
      if (!lease || lease.ownerId !== from) return false;
      const { handoverTo: _handoverTo, ...rest } = lease;
      leases.set(id, { ...rest, ownerId: to });
      return true;
    },

    async requestLeaseHandover(capability, lifetime, key, input) {
      assertOpen(tables);
      const { from, to } = parseStoreInput(schemas.leaseOwners, input, "lease owners");
      const lease = leases.get(leaseKey(capability, lifetime, key));
      if (!lease || lease.ownerId !== from) return false;
      lease.handoverTo = to;
      return true;
    },
  };
}

/** A lease's key in {@link MemoryTables.leases}. */
function leaseKey(capability: string, lifetime: CapabilityLifetime, key: string): string {
  return JSON.stringify([capability, lifetime, key]);
}
