import { asStored, parseStoreInput, storeInputSchemas as schemas } from "../parse-store-input.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import { assertOpen, copy, type MemoryTables } from "./memory-tables.ts";

/** The memory store's checkpoint records. */
export function memoryCheckpointMethods(tables: MemoryTables): ThreadStoreParts["checkpoints"] {
  const { checkpoints } = tables;
  return {
    async putCheckpoint(input) {
      assertOpen(tables);
      const checkpoint = asStored(parseStoreInput(schemas.checkpoint, input, "checkpoint"), "checkpoint");
      checkpoints.set(checkpoint.id, checkpoint);
    },

    async listCheckpoints(threadId) {
      assertOpen(tables);
      return copy(
        [...checkpoints.values()]
          .filter((checkpoint) => checkpoint.threadId === threadId)
          .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
      );
    },

    async deleteCheckpoints(threadId, input) {
      assertOpen(tables);
      const ids = parseStoreInput(schemas.checkpointIds, input, "checkpoint ids");
      for (const id of ids) {
        if (checkpoints.get(id)?.threadId === threadId) checkpoints.delete(id);
      }
    },

    async listCheckpointDigests() {
      assertOpen(tables);
      return [...new Set([...checkpoints.values()].map((checkpoint) => checkpoint.manifestDigest))];
    },
  };
}
