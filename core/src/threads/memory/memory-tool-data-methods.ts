import {
  asStored,
  parseStoreInput,
  storeInputSchemas as schemas,
  withoutUndefined,
} from "../parse-store-input.ts";
import type { ToolDataRecord } from "../thread-store.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import { assertOpen, copy, type MemoryTables } from "./memory-tables.ts";

/** The memory store's tool-data writes. */
export function memoryToolDataMethods(tables: MemoryTables): ThreadStoreParts["toolData"] {
  const { toolData } = tables;
  return {
    async appendToolData(input) {
      assertOpen(tables);
      const record = asStored(parseStoreInput(schemas.toolData, input, "tool data"), "tool data");
      const stored: ToolDataRecord = withoutUndefined({
        ...record,
        data: record.data,
        seq: tables.nextToolDataSeq++,
      });
      toolData.push(stored);
      return copy(stored);
    },

    async listToolData(input) {
      assertOpen(tables);
      const query = parseStoreInput(schemas.toolDataQuery, input, "tool data query");
      return copy(
        toolData.filter(
          (record) =>
            record.threadId === query.threadId &&
            (query.toolCallId === undefined || record.toolCallId === query.toolCallId) &&
            (query.channel === undefined || record.channel === query.channel),
        ),
      );
    },
  };
}
