import type { CapabilityMap } from "../capabilities/define-capability.ts";
import type { ToolEntry, ToolExecuteContext } from "../tools/tool-context.ts";
import { ToolFailSignal, ToolSuspendSignal } from "../tools/tool-signals.ts";
import type { InnerCalls } from "./inner-calls.ts";
import type { CallFrame } from "./pipeline-call.ts";
import type { RunState } from "./run-state.ts";
import { createToolDataAccess } from "./tool-data-access.ts";

/** What a call's `ctx` is made of, besides the run. */
export interface CallContextOptions {
  /** The call whose `execute` gets the `ctx`; its own `ctx.suspend` is recorded on it. */
  frame: CallFrame;
  /** The call's input, parsed. */
  input: unknown;
  entry: ToolEntry;
  suspendHistory: unknown[];
  /** Where `ctx.tools` and `ctx.agents` calls go. */
  inner: InnerCalls;
}

/** The `ctx` of a call's `execute`: the call's place in the run, its signals, data, files, capabilities and inner calls. */
export function createCallContext(
  state: RunState,
  options: CallContextOptions,
): ToolExecuteContext<unknown, unknown, CapabilityMap> {
  const { frame, inner } = options;
  const { definition, label, toolCallId } = frame.call;
  const capabilityNames = Object.fromEntries(
    Object.entries(definition.capabilities as CapabilityMap).map(([key, capability]) => [
      key,
      capability.name,
    ]),
  );
  return {
    input: options.input,
    context: frame.context,
    signal: state.controller.signal,
    thread: { threadId: state.threadId, runId: state.runId, toolCallId, toolName: label },
    agentId: state.agent.id,
    entry: options.entry,
    fail(message, failOptions) {
      throw new ToolFailSignal(message, failOptions?.code);
    },
    suspend(payload, suspendOptions) {
      frame.suspended = new ToolSuspendSignal(payload, suspendOptions?.name ?? "default");
      throw frame.suspended;
    },
    suspendHistory: options.suspendHistory,
    data: createToolDataAccess(state, frame.call),
    files: state.files,
    capabilities: state.capabilitiesFor(capabilityNames) as never,
    tools: Object.fromEntries(
      Object.entries(definition.tools).map(([childKey, child]) => [
        childKey,
        (childInput: unknown) => inner.tool(frame, childKey, child, childInput),
      ]),
    ) as never,
    agents: { run: (runOptions) => inner.agent(frame, runOptions) },
  };
}
