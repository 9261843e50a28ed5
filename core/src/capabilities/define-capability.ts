import type { CapabilityLifetime } from "../threads/thread-store.ts";

declare const facadeType: unique symbol;

/**
 * A capability declaration: a name, the facade type tools see at `ctx.capabilities.<name>`, and the default
 * lifetime of the resource behind it. Declarations are pure; a binding supplied to
 * `createAgentRuntime({ capabilities })` provisions the resource.
 */
export interface Capability<NAME extends string = string, FACADE = unknown> {
  readonly kind: "pai.capability";
  readonly name: NAME;
  readonly defaultLifetime: CapabilityLifetime;
  readonly description: string | undefined;
  /** Type-only carrier of the facade type. */
  readonly [facadeType]?: FACADE;
}

/** The facade type of a capability declaration. */
export type FacadeOf<C> = C extends Capability<string, infer FACADE> ? FACADE : never;

/** A map of capability declarations, as tools list them in `capabilities: { sandbox }`. */
export type CapabilityMap = Record<string, Capability<string, any>>;

/** What `ctx.capabilities` holds for a tool that declared `CAPABILITIES`. */
export type CapabilityFacades<CAPABILITIES extends CapabilityMap> = {
  readonly [K in keyof CAPABILITIES]: FacadeOf<CAPABILITIES[K]>;
};

/**
 * Declares a capability.
 * @example
 * export const sandbox = defineCapability<"sandbox", SandboxFacade>({ name: "sandbox", defaultLifetime: "thread" });
 */
export function defineCapability<NAME extends string, FACADE>(options: {
  name: NAME;
  /** @default "thread" */
  defaultLifetime?: CapabilityLifetime;
  description?: string;
}): Capability<NAME, FACADE> {
  return {
    kind: "pai.capability",
    name: options.name,
    defaultLifetime: options.defaultLifetime ?? "thread",
    description: options.description,
  };
}
