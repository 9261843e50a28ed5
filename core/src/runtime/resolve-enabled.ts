import type { AgentResolverArgs } from "../agents/define-agent.ts";
import type { NormalizedRegistration } from "../agents/tool-registration.ts";

/** Resolves a registration's `enabled` gate (boolean, or a sync/async resolver). */
export async function resolveEnabled(
  registration: NormalizedRegistration,
  args: AgentResolverArgs<unknown, unknown>,
): Promise<boolean> {
  const { enabled } = registration;
  if (enabled === undefined) return true;
  if (typeof enabled === "boolean") return enabled;
  return (await enabled(args)) === true;
}

/** The names of the registrations enabled right now. */
export async function resolveActiveTools(
  registrations: Iterable<NormalizedRegistration>,
  args: AgentResolverArgs<unknown, unknown>,
): Promise<string[]> {
  const list = [...registrations];
  const flags = await Promise.all(list.map((registration) => resolveEnabled(registration, args)));
  return list.filter((_, index) => flags[index]).map((registration) => registration.name);
}

/** Whether every registration in `gates` is enabled right now (a call goes through all of them). */
export async function allEnabled(
  gates: readonly NormalizedRegistration[],
  args: AgentResolverArgs<unknown, unknown>,
): Promise<boolean> {
  const open = await Promise.all(gates.map((gate) => resolveEnabled(gate, args)));
  return open.every(Boolean);
}
