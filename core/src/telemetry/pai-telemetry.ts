import { createRequire } from "node:module";
import {
  type Attributes,
  type Context,
  context,
  createContextKey,
  type Link,
  type Span,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  trace,
} from "@opentelemetry/api";
import type { TelemetryOptions } from "ai";

/** `@pai/core`'s version, the tracer's and the meter's (read from its package.json, from `src/` or `dist/`). */
export const paiVersion: string = (
  createRequire(import.meta.url)("../../package.json") as { version: string }
).version;

/**
 * What `createAgentRuntime({ telemetry })` takes: the AI SDK's telemetry settings (passed as they are to every
 * `streamText` of a run), which also decide PAI's own spans, plus PAI's own opt-ins.
 *
 * PAI's spans and metrics go through `@opentelemetry/api` to whatever tracer and meter provider the app registered:
 * with none, they cost next to nothing (the API's no-op provider). Unlike the AI SDK's, PAI's attributes leave out
 * what a tool was given and gave back, and a command's text, unless asked for.
 */
export interface TelemetrySettings extends TelemetryOptions {
  /** `false` turns PAI's spans off too (its metrics stay). @default true */
  isEnabled?: boolean;
  /** Tool calls' input (JSON, cut at 4 KiB) on `pai.tool` spans as `pai.tool.input`. @default false */
  recordInputs?: boolean;
  /** Tool calls' output (JSON, cut at 4 KiB) on `pai.tool` spans as `pai.tool.output`. @default false */
  recordOutputs?: boolean;
  /** A sandbox command's text (`pai.sandbox.command.text`) on `pai.sandbox.command` spans. @default false */
  recordCommands?: boolean;
}

/** PAI's own reading of {@link TelemetrySettings}, carried in the OpenTelemetry context of a run. */
export interface PaiTelemetryFlags {
  readonly enabled: boolean;
  readonly recordInputs: boolean;
  readonly recordOutputs: boolean;
  readonly recordCommands: boolean;
}

const defaultFlags: PaiTelemetryFlags = {
  enabled: true,
  recordInputs: false,
  recordOutputs: false,
  recordCommands: false,
};

const flagsKey = createContextKey("pai.telemetry.flags");

/** PAI's flags from the runtime's settings (defaults: spans on, no inputs, outputs or command text). */
export function telemetryFlags(settings: TelemetrySettings | undefined): PaiTelemetryFlags {
  if (!settings) return defaultFlags;
  return {
    enabled: settings.isEnabled !== false,
    recordInputs: settings.recordInputs === true,
    recordOutputs: settings.recordOutputs === true,
    recordCommands: settings.recordCommands === true,
  };
}

/** `parent` (the active context by default) carrying `flags`, for what runs below it (tools, sandboxes). */
export function withTelemetryFlags(flags: PaiTelemetryFlags, parent: Context = context.active()): Context {
  return parent.setValue(flagsKey, flags);
}

/** The flags in force where the caller runs: a run's, or the defaults outside one. */
export function activeTelemetryFlags(at: Context = context.active()): PaiTelemetryFlags {
  return (at.getValue(flagsKey) as PaiTelemetryFlags | undefined) ?? defaultFlags;
}

/** The tracer provider the app registered (what the API's global proxy delegates to), or the API's no-op one. */
function registeredTracerProvider(): TracerProvider {
  const global = trace.getTracerProvider() as TracerProvider & { getDelegate?: () => TracerProvider };
  return global.getDelegate?.() ?? global;
}

let made: { provider: TracerProvider; tracer: Tracer } | undefined;

/**
 * PAI's tracer, from the global tracer provider (the API's no-op one until the app registers an SDK): made once per
 * registered provider, as the API's own lookup costs a map search on every span.
 */
export function paiTracer(): Tracer {
  const provider = registeredTracerProvider();
  if (made?.provider !== provider) made = { provider, tracer: provider.getTracer("@pai/core", paiVersion) };
  return made.tracer;
}

/** How a PAI span starts. */
export interface PaiSpanOptions {
  attributes?: Attributes;
  /** Its parent's context. @default the active context */
  parent?: Context;
  links?: Link[];
  /** When it started, for a span made after the fact (epoch milliseconds). */
  startTime?: number;
}

/** A span that records nothing: what PAI's helpers give where telemetry is off. */
const offSpan: Span = trace.wrapSpanContext({
  traceId: "0".repeat(32),
  spanId: "0".repeat(16),
  traceFlags: 0,
});

/**
 * Starts a PAI span (not made active: run code under it with {@link runInSpan}). Where the flags in `parent` turn
 * telemetry off, a span that records nothing.
 */
export function startPaiSpan(name: string, options: PaiSpanOptions = {}): Span {
  const parent = options.parent ?? context.active();
  if (!activeTelemetryFlags(parent).enabled) return offSpan;
  return paiTracer().startSpan(
    name,
    {
      ...(options.attributes ? { attributes: options.attributes } : {}),
      ...(options.links ? { links: options.links } : {}),
      ...(options.startTime !== undefined ? { startTime: options.startTime } : {}),
    },
    parent,
  );
}

/** Runs `fn` with `span` active below `parent` (the active context by default). */
export function runInSpan<T>(span: Span, fn: () => T, parent: Context = context.active()): T {
  return context.with(trace.setSpan(parent, span), fn);
}

/** The code of a PAI-family error (`PaiError`, `PoolError`, `SandboxError`...), if `error` has one. */
export function errorCodeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === "string" ? code : undefined;
}

/**
 * Marks `span` failed: the exception recorded, status ERROR with `message` (the error's by default), and
 * `pai.error.code` when there is one (`code` overrides the error's).
 */
export function failSpan(
  span: Span,
  error: unknown,
  options: { code?: string; message?: string } = {},
): void {
  if (!span.isRecording()) return;
  if (error !== undefined)
    span.recordException(error instanceof Error ? error : { message: String(error), name: "Error" });
  const code = options.code ?? errorCodeOf(error);
  if (code !== undefined) span.setAttribute("pai.error.code", code);
  const message = options.message ?? (error instanceof Error ? error.message : undefined);
  span.setStatus({ code: SpanStatusCode.ERROR, ...(message !== undefined ? { message } : {}) });
}

/** A value as a span attribute: JSON, cut at 4 KiB. */
export function jsonAttribute(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? "undefined";
  } catch {
    text = String(value);
  }
  return text.length > 4096 ? `${text.slice(0, 4096)}…` : text;
}

/**
 * Runs `fn` in a new active span `name` and ends it when `fn` settles: a rejection fails it (with the error's
 * code). What the result says goes on the span through `onResult`.
 */
export async function inPaiSpan<T>(
  name: string,
  options: PaiSpanOptions & { onResult?: (span: Span, result: T) => void },
  fn: () => Promise<T>,
): Promise<T> {
  const span = startPaiSpan(name, options);
  if (!span.isRecording()) return fn();
  try {
    const result = await runInSpan(span, fn, options.parent);
    options.onResult?.(span, result);
    return result;
  } catch (error) {
    failSpan(span, error);
    throw error;
  } finally {
    span.end();
  }
}
