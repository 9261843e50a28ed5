import { PaiError } from "../errors/pai-error.ts";
import type { ToolDataAccess, ToolDataChannels, ToolDataEntry } from "../tools/tool-context.ts";
import type { PipelineCall } from "./pipeline-call.ts";
import { allEnabled } from "./resolve-enabled.ts";
import type { RunState } from "./run-state.ts";

/**
 * `ctx.data` of one call. A write is refused (`TOOL_DISABLED`) once any of the call's gates is closed, parsed by the
 * channel's schema, stored on the thread and streamed as a `data-<channel>` part; `list` reads the thread's writes on
 * a channel (this tool's, or one call's).
 */
export function createToolDataAccess(state: RunState, call: PipelineCall): ToolDataAccess<ToolDataChannels> {
  const { definition, label, toolCallId, gates } = call;
  return {
    write: async (channel, data) => {
      if (!(await allEnabled(gates, state.resolverArgs))) {
        throw new PaiError("TOOL_DISABLED", `tool "${label}" is disabled; it cannot write tool data`);
      }
      const schema = definition.dataSchemas?.[channel];
      const value = schema ? schema.parse(data) : data;
      const record = await state.store.appendToolData({
        threadId: state.threadId,
        runId: state.runId,
        toolCallId,
        toolId: definition.id,
        channel,
        data: value,
        createdAt: Date.now(),
      });
      state.transcript.write({
        type: `data-${channel}`,
        data: { toolCallId, toolId: definition.id, toolName: label, seq: record.seq, value },
      } as never);
    },
    list: async (channel, options) => {
      const records = await state.store.listToolData({
        threadId: state.threadId,
        channel,
        ...(options?.toolCallId ? { toolCallId: options.toolCallId } : {}),
      });
      return records
        .filter((record) => options?.toolCallId !== undefined || record.toolId === definition.id)
        .map(
          (record): ToolDataEntry<typeof channel, never> => ({
            channel,
            data: record.data as never,
            toolCallId: record.toolCallId,
            seq: record.seq,
            createdAt: record.createdAt,
          }),
        );
    },
  };
}
