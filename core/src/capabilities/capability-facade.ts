import type { PreviewExposer } from "../previews/port-preview.ts";
import { paiMetrics } from "../telemetry/pai-metrics.ts";
import type { CapabilityLifetime } from "../threads/thread-store.ts";
import type { CapabilityConnectionEvent, ProvisionedResource } from "./capability-binding.ts";
import type { LeaseScope } from "./lease-scope.ts";

/** A connection on `pai.egress.bytes` (up and down) and, refused, on `pai.egress.refusals`. */
function countEgress(capability: string, connection: CapabilityConnectionEvent): void {
  const { egressBytes, egressRefusals } = paiMetrics();
  const attributes = { "pai.capability.name": capability };
  if (connection.decision === "refused") egressRefusals.add(1, attributes);
  if (connection.bytesUp > 0)
    egressBytes.add(connection.bytesUp, { ...attributes, "pai.egress.direction": "up" });
  if (connection.bytesDown > 0)
    egressBytes.add(connection.bytesDown, { ...attributes, "pai.egress.direction": "down" });
}

/** What a capability facade offers and calls through to. */
export interface CapabilityFacadeOptions {
  capability: string;
  lifetime: CapabilityLifetime;
  /** The members the capability declares (`Capability.members`): the facade's only methods. */
  members: readonly string[];
  /** The scope whose run the calls belong to: its signal stops them, its `onStatus` hears their connections. */
  scope: LeaseScope;
  /** The scope's resource, running (provisioned, woken or started again as needed): awaited before every call. */
  awake: () => Promise<ProvisionedResource>;
  /** How the facade opens previews of the resource's ports; absent where the runtime serves none. */
  previews?: PreviewExposer | undefined;
}

/** A facade method as tools call it: every one is async, since the resource may first have to be provisioned. */
type FacadeMethod = (...args: unknown[]) => Promise<unknown>;

/**
 * The facade a tool sees at `ctx.capabilities.<name>`: one method per declared member, which provisions the
 * resource on first use (and wakes it before each call), then calls through to the resource's facade, bound to
 * the scope's signal. Reading `ctx.capabilities.x` starts nothing, nor does reading a member; any other name is
 * `undefined` (the object is frozen and has no prototype), so calling a misspelled member is a TypeError and
 * provisions nothing.
 */
export function createCapabilityFacade(
  options: CapabilityFacadeOptions,
): Readonly<Record<string, FacadeMethod>> {
  const { members, awake } = options;
  const bound = createBoundFacade(options);
  const facade: Record<string, FacadeMethod> = Object.create(null);
  for (const member of members) {
    facade[member] = async (...args: unknown[]) => {
      const target = bound(await awake());
      const value = target[member];
      if (typeof value !== "function") return value;
      return value.apply(target, args);
    };
  }
  return Object.freeze(facade);
}

/**
 * The resource's facade as the scope's run sees it (`resource.bind`), made once per resource and again when the
 * resource's facade changed (it woke or was started again).
 */
function createBoundFacade({
  capability,
  lifetime,
  scope,
  previews,
}: CapabilityFacadeOptions): (resource: ProvisionedResource) => Record<string, unknown> {
  let bound: { resource: ProvisionedResource; source: unknown; facade: Record<string, unknown> } | undefined;
  return (resource) => {
    const source = resource.facade;
    if (bound?.resource !== resource || bound.source !== source) {
      const report = (connection: CapabilityConnectionEvent) => {
        countEgress(capability, connection);
        scope.onStatus?.({
          capability,
          lifetime,
          status: "connection",
          resourceId: resource.resourceId,
          connection,
        });
      };
      const facade = resource.bind
        ? resource.bind({ signal: scope.signal, report, ...(previews ? { previews } : {}) })
        : resource.facade;
      bound = { resource, source, facade: facade as Record<string, unknown> };
    }
    return bound.facade;
  };
}
