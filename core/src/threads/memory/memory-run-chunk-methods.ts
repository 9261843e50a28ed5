import { parseStoreInput, storeInputSchemas as schemas, toStoredJson } from "../parse-store-input.ts";
import type { RunChunkRecord } from "../thread-store.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import { assertOpen, type MemoryTables, notifyRun } from "./memory-tables.ts";

/** The memory store's stored chunks of runs' streams, and who follows them. */
export function memoryRunChunkMethods(tables: MemoryTables): ThreadStoreParts["runChunks"] {
  const { runs, runChunks, stopRequests, watchers } = tables;
  return {
    async appendRunChunks(input) {
      assertOpen(tables);
      const batch = parseStoreInput(schemas.runChunks, input, "run chunks");
      const texts = batch.chunks.map((chunk, index) => toStoredJson(chunk, `run chunk ${batch.seq + index}`));
      let stored = runChunks.get(batch.runId);
      if (!stored) {
        stored = new Map();
        runChunks.set(batch.runId, stored);
      }
      for (const [index, text] of texts.entries()) {
        if (!stored.has(batch.seq + index)) stored.set(batch.seq + index, text ?? "null");
      }
      notifyRun(tables, batch.runId);
    },

    async listRunChunks(runId, input = {}) {
      assertOpen(tables);
      const query = parseStoreInput(schemas.runChunkQuery, input, "run chunk query");
      const after = query.afterSeq ?? -1;
      const found: RunChunkRecord[] = [];
      for (const [seq, text] of runChunks.get(runId) ?? []) {
        if (seq > after) found.push({ runId, seq, chunk: JSON.parse(text) });
      }
      return found.sort((a, b) => a.seq - b.seq);
    },

    async pruneRunChunks(endedBefore) {
      assertOpen(tables);
      const before = parseStoreInput(schemas.timestamp, endedBefore, "endedBefore");
      const ended = (runId: string) => {
        const run = runs.get(runId);
        return (
          run !== undefined && run.status !== "running" && run.endedAt !== undefined && run.endedAt < before
        );
      };
      for (const runId of runChunks.keys()) if (ended(runId)) runChunks.delete(runId);
      for (const runId of stopRequests) if (ended(runId)) stopRequests.delete(runId);
    },

    watchRun(runId, onChange) {
      let set = watchers.get(runId);
      if (!set) {
        set = new Set();
        watchers.set(runId, set);
      }
      const own = () => onChange();
      set.add(own);
      return () => {
        set.delete(own);
        if (set.size === 0 && watchers.get(runId) === set) watchers.delete(runId);
      };
    },
  };
}
