import { PaiError } from "../../errors/pai-error.ts";
import {
  applyRunPatch,
  asStored,
  parseStoreInput,
  storeInputSchemas as schemas,
} from "../parse-store-input.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import { assertOpen, copy, type MemoryTables } from "./memory-tables.ts";
import { byStartedAt } from "./record-order.ts";

/** The memory store's run records. */
export function memoryRunMethods(tables: MemoryTables): ThreadStoreParts["runs"] {
  const { runs } = tables;
  return {
    async createRun(input) {
      assertOpen(tables);
      const run = asStored(parseStoreInput(schemas.run, input, "run"), "run");
      if (runs.has(run.id)) throw new PaiError("INVALID_ARGUMENT", `Run ${run.id} already exists`);
      runs.set(run.id, run);
    },

    async getRun(runId) {
      assertOpen(tables);
      return copy(runs.get(runId));
    },

    async listRuns(threadId) {
      assertOpen(tables);
      return copy([...runs.values()].filter((run) => run.threadId === threadId).sort(byStartedAt));
    },

    async updateRun(runId, input) {
      assertOpen(tables);
      const patch = parseStoreInput(schemas.runPatch, input, "run patch");
      const run = runs.get(runId);
      if (!run) throw new PaiError("UNKNOWN_RUN", `Run ${runId} does not exist`, { details: { runId } });
      runs.set(runId, applyRunPatch(run, patch, input));
    },

    async listRunsByStatus(input) {
      assertOpen(tables);
      const status = parseStoreInput(schemas.runStatus, input, "run status");
      return copy([...runs.values()].filter((run) => run.status === status).sort(byStartedAt));
    },

    async settleRun(runId, expectedInput, input) {
      assertOpen(tables);
      const expected = parseStoreInput(schemas.runStatus, expectedInput, "expected status");
      const patch = parseStoreInput(schemas.settleRunPatch, input, "run settle patch");
      const run = runs.get(runId);
      if (!run || run.status !== expected) return false;
      runs.set(runId, applyRunPatch(run, patch, input));
      return true;
    },
  };
}
