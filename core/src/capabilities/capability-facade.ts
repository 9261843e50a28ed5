import type { CapabilityLifetime } from "../threads/thread-store.ts";
import type { CapabilityConnectionEvent, ProvisionedResource } from "./capability-binding.ts";
import type { LeaseScope } from "./lease-scope.ts";

/** What a capability facade calls through to. */
export interface CapabilityFacadeOptions {
  capability: string;
  lifetime: CapabilityLifetime;
  /** The scope whose run the calls belong to: its signal stops them, its `onStatus` hears their connections. */
  scope: LeaseScope;
  /** The scope's resource, running (provisioned, woken or started again as needed): awaited before every call. */
  awake: () => Promise<ProvisionedResource>;
}

/**
 * The facade a tool sees at `ctx.capabilities.<name>`: every method provisions the resource on first use and then
 * calls through to the resource's facade, bound to the scope's signal. Reading `ctx.capabilities.x` starts
 * nothing; the first method call does.
 */
export function createCapabilityFacade(options: CapabilityFacadeOptions): unknown {
  const { awake } = options;
  const methods = new Map<PropertyKey, unknown>();
  const bound = createBoundFacade(options);
  return new Proxy(
    {},
    {
      get: (_target, property) => {
        if (property === "then") return undefined;
        let method = methods.get(property);
        if (!method) {
          method = async (...args: unknown[]) => {
            const facade = bound(await awake());
            const member = facade[property];
            if (typeof member !== "function") return member;
            return member.apply(facade, args);
          };
          methods.set(property, method);
        }
        return method;
      },
    },
  );
}

/**
 * The resource's facade as the scope's run sees it (`resource.bind`), made once per resource and again when the
 * resource's facade changed (it woke or was started again).
 */
function createBoundFacade({
  capability,
  lifetime,
  scope,
}: CapabilityFacadeOptions): (resource: ProvisionedResource) => Record<PropertyKey, unknown> {
  let bound:
    | { resource: ProvisionedResource; source: unknown; facade: Record<PropertyKey, unknown> }
    | undefined;
  return (resource) => {
    const source = resource.facade;
    if (bound?.resource !== resource || bound.source !== source) {
      const report = (connection: CapabilityConnectionEvent) =>
        scope.onStatus?.({
          capability,
          lifetime,
          status: "connection",
          resourceId: resource.resourceId,
          connection,
        });
      const facade = resource.bind ? resource.bind({ signal: scope.signal, report }) : resource.facade;
      bound = { resource, source, facade: facade as Record<PropertyKey, unknown> };
    }
    return bound.facade;
  };
}
