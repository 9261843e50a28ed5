import { tracingChannel } from "node:diagnostics_channel";
import { AI_SDK_TELEMETRY_TRACING_CHANNEL, type TelemetryOptions } from "ai";

/** The AI SDK's tracing channel: where instrumentations (an APM's, the SDK's own) may listen to its calls. */
const aiTracingChannel = tracingChannel(AI_SDK_TELEMETRY_TRACING_CHANNEL);

/** The integrations the app registered with the AI SDK's `registerTelemetry` (the SDK keeps them on this global). */
function registeredIntegrations(): readonly unknown[] {
  return (globalThis as { AI_SDK_TELEMETRY_INTEGRATIONS?: unknown[] }).AI_SDK_TELEMETRY_INTEGRATIONS ?? [];
}

/**
 * What one `streamText` call gets as `telemetry`: the app's settings as they are while something can take the AI
 * SDK's telemetry — an integration of the call's own or one registered with `registerTelemetry`, or a subscriber to
 * its tracing channel — and turned off otherwise, since the AI SDK then builds every event for nobody (about a tenth
 * of a short run). Asked for each call: an integration registered or a subscriber added later is heard from then on.
 */
export function aiTelemetryForCall(settings: TelemetryOptions | undefined): TelemetryOptions | undefined {
  if (settings?.isEnabled === false || settings?.integrations !== undefined) return settings;
  if (registeredIntegrations().length > 0 || aiTracingChannel.hasSubscribers) return settings;
  return { ...settings, isEnabled: false };
}
