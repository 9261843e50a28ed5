import { asStored, parseStoreInput, storeInputSchemas as schemas } from "../parse-store-input.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import { assertOpen, copy, type MemoryTables } from "./memory-tables.ts";
import { byStartedAt } from "./record-order.ts";

/** The memory store's owners: the runtime processes sharing it, and their heartbeats. */
export function memoryOwnerMethods(tables: MemoryTables): ThreadStoreParts["owners"] {
  const { owners } = tables;
  return {
    async heartbeatOwner(input) {
      assertOpen(tables);
      const owner = asStored(parseStoreInput(schemas.owner, input, "owner"), "owner");
      owners.set(owner.ownerId, owner);
    },

    async listOwners() {
      assertOpen(tables);
      return copy([...owners.values()].sort(byStartedAt));
    },

    async removeOwner(ownerId) {
      assertOpen(tables);
      owners.delete(ownerId);
    },
  };
}
