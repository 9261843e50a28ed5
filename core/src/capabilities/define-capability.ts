import { PaiError } from "../errors/pai-error.ts";
import type { CapabilityLifetime } from "../threads/thread-store.ts";

declare const facadeType: unique symbol;

/**
 * A capability declaration: a name, the facade type tools see at `ctx.capabilities.<name>`, the members of that
 * facade, and the default lifetime of the resource behind it. Declarations are pure; a binding supplied to
 * `createAgentRuntime({ capabilities })` provisions the resource.
 */
export interface Capability<NAME extends string = string, FACADE = unknown> {
  readonly kind: "pai.capability";
  readonly name: NAME;
  readonly defaultLifetime: CapabilityLifetime;
  readonly description: string | undefined;
  /**
   * The facade's members, by name: `ctx.capabilities.<name>` has exactly these methods. Any other name is
   * `undefined` there (calling it is a TypeError) and provisions nothing.
   */
  readonly members: readonly string[];
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
 * Every (string-named) member of a facade, each set to `true`, as zod's `pick` names keys: the type checker
 * refuses a member left out and a name the facade does not have.
 * @example
 * const members: FacadeMembers<{ open(): Promise<void>; close(): Promise<void> }> = { open: true, close: true };
 */
export type FacadeMembers<FACADE> = { readonly [K in keyof FACADE & string]: true };

/** The `members` option of {@link defineCapability}. */
interface MembersOption<FACADE> {
  /**
   * Every member of the facade (`{ runCommand: true, ... }`). A call reaches the resource only through these; a
   * facade with no members (`object`) may leave it out.
   */
  members: FacadeMembers<FACADE>;
}

/** Options of {@link defineCapability}; `members` is required when the facade has members. */
export type CapabilityOptions<NAME extends string, FACADE> = {
  name: NAME;
  /** @default "thread" */
  defaultLifetime?: CapabilityLifetime;
  description?: string;
} & ([keyof FACADE & string] extends [never] ? Partial<MembersOption<FACADE>> : MembersOption<FACADE>);

/**
 * Declares a capability.
 * @throws PaiError `INVALID_ARGUMENT` for a member named `then` (the facade would pass for a promise)
 * @example
 * export const sandbox = defineCapability<"sandbox", SandboxFacade>({
 *   name: "sandbox",
 *   defaultLifetime: "thread",
 *   members: { runCommand: true, spawn: true, readFile: true, ... },
 * });
 */
export function defineCapability<NAME extends string, FACADE>(
  options: CapabilityOptions<NAME, FACADE>,
): Capability<NAME, FACADE> {
  const members = Object.keys(options.members ?? {});
  if (members.includes("then")) {
    throw new PaiError(
      "INVALID_ARGUMENT",
      `capability "${options.name}" declares a member "then": its facade would be taken for a promise`,
      { details: { capability: options.name } },
    );
  }
  return {
    kind: "pai.capability",
    name: options.name,
    defaultLifetime: options.defaultLifetime ?? "thread",
    description: options.description,
    members,
  };
}
