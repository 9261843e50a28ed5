import {
  type Context,
  context,
  isSpanContextValid,
  type Span,
  type SpanContext,
  SpanStatusCode,
  TraceFlags,
  trace,
} from "@opentelemetry/api";
import type { TelemetryOptions } from "ai";
import type { PendingActionRecord } from "../threads/thread-store.ts";
import { paiMetrics } from "./pai-metrics.ts";
import {
  failSpan,
  type PaiTelemetryFlags,
  startPaiSpan,
  type TelemetrySettings,
  telemetryFlags,
  withTelemetryFlags,
} from "./pai-telemetry.ts";

/** The runtime's telemetry, as every run of it reads it. */
export interface RuntimeTelemetry {
  flags: PaiTelemetryFlags;
  /** What `streamText` gets as `telemetry`: the app's settings, or nothing (the AI SDK's defaults). */
  ai: TelemetryOptions | undefined;
}

/** The runtime's telemetry from `createAgentRuntime({ telemetry })`. */
export function runtimeTelemetry(settings: TelemetrySettings | undefined): RuntimeTelemetry {
  if (!settings) return { flags: telemetryFlags(undefined), ai: undefined };
  const { recordCommands: _recordCommands, ...ai } = settings;
  return { flags: telemetryFlags(settings), ai };
}

/** One run's span (`pai.run`) and the context everything the run does runs in. */
export interface RunTelemetry {
  readonly span: Span;
  /** The run's span active, with PAI's flags: the parent of the AI SDK's spans and the run's `pai.tool` spans. */
  readonly context: Context;
  /** Links the run to the run that made `action` (a resumed run to the one that suspended), if it was traced. */
  linkTo(action: Pick<PendingActionRecord, "traceParent" | "id">): void;
  /** The W3C `traceparent` of the run's span, stored with the pending actions it makes. */
  traceParent(): string | undefined;
  /** Records a pending action the run made as an event on its span, and counts it open. */
  pendingAction(action: PendingActionRecord): void;
  /** Ends the span with the run's final status (`error`: why it failed, as the client is told). */
  end(status: string, error?: unknown): void;
}

/** Starts `pai.run` below the active context (an HTTP request's span, a subagent's tool call). */
export function startRunTelemetry(
  telemetry: RuntimeTelemetry,
  run: { runId: string; threadId: string; agentId: string; continuation: boolean },
): RunTelemetry {
  const parent = withTelemetryFlags(telemetry.flags, context.active());
  const span = startPaiSpan("pai.run", {
    parent,
    attributes: {
      "pai.run.id": run.runId,
      "pai.thread.id": run.threadId,
      "pai.agent.id": run.agentId,
      "pai.run.kind": run.continuation ? "continuation" : "message",
    },
  });
  const runContext = trace.setSpan(parent, span);
  let ended = false;
  return {
    span,
    context: runContext,
    linkTo(action) {
      const linked = action.traceParent && spanContextOf(action.traceParent);
      if (!linked || !span.isRecording()) return;
      span.addLink({ context: linked, attributes: { "pai.pending_action.id": action.id } });
    },
    traceParent() {
      const own = span.spanContext();
      if (!span.isRecording() || !isSpanContextValid(own)) return undefined;
      return `00-${own.traceId}-${own.spanId}-0${own.traceFlags & TraceFlags.SAMPLED}`;
    },
    pendingAction(action) {
      paiMetrics().pendingActionsOpen.add(1);
      span.addEvent("pai.pending_action", {
        "pai.pending_action.id": action.id,
        "pai.pending_action.kind": action.kind,
        "pai.tool.id": action.toolId,
        "pai.tool.name": action.toolName,
        "pai.tool.call_id": action.toolCallId,
        ...(action.name !== undefined ? { "pai.pending_action.name": action.name } : {}),
        ...(action.inner ? { "pai.tool.path": action.inner.path } : {}),
      });
    },
    end(status, error) {
      if (ended) return;
      ended = true;
      paiMetrics().runs.add(1, { "pai.run.status": status, "pai.agent.id": run.agentId });
      span.setAttribute("pai.run.status", status);
      if (status === "failed") failSpan(span, error);
      else span.setStatus({ code: SpanStatusCode.OK });
      span.end();
    },
  };
}

/** A stored `traceparent` (`00-<trace id>-<span id>-<flags>`) as a span context, or `undefined` when malformed. */
function spanContextOf(traceParent: string): SpanContext | undefined {
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(traceParent);
  if (!match) return undefined;
  const linked: SpanContext = {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: Number.parseInt(match[3]!, 16),
    isRemote: true,
  };
  return isSpanContextValid(linked) ? linked : undefined;
}
