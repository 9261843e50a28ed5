import { parseStoreInput, storeInputSchemas as schemas } from "../parse-store-input.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import { assertOpen, type MemoryTables } from "./memory-tables.ts";

/** The memory store's stop requests: stops asked for runs. */
export function memoryStopRequestMethods(tables: MemoryTables): ThreadStoreParts["stopRequests"] {
  const { runs, stopRequests } = tables;
  return {
    async requestRunStop(runId) {
      assertOpen(tables);
      if (runs.get(runId)?.status !== "running") return false;
      stopRequests.add(runId);
      return true;
    },

    async listRunStopRequests(input) {
      assertOpen(tables);
      const runIds = parseStoreInput(schemas.runIds, input, "run ids");
      return [...new Set(runIds)].filter((runId) => stopRequests.has(runId));
    },
  };
}
