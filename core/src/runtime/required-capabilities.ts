import type { Pai } from "../agents/create-pai.ts";
import type { AgentDefinition } from "../agents/define-agent.ts";
import type { CapabilityBinding } from "../capabilities/capability-binding.ts";
import type { Capability, CapabilityMap, FacadeOf } from "../capabilities/define-capability.ts";
import type { ToolDefinition } from "../tools/define-tool.ts";

type IsAny<T> = 0 extends 1 & T ? true : false;
type ToolOf<R> = R extends { tool: infer TOOL } ? TOOL : R;
type CapabilitiesOf<T> =
  T extends ToolDefinition<any, any, any, infer CAPABILITIES, any, any, any, any>
    ? IsAny<CAPABILITIES> extends true
      ? {}
      : CAPABILITIES
    : {};
type AgentCapabilityMaps<A> =
  A extends AgentDefinition<any, any, infer TOOLS>
    ? { [K in keyof TOOLS]: CapabilitiesOf<ToolOf<TOOLS[K]>> }[keyof TOOLS]
    : never;
type Values<M> = M extends CapabilityMap ? M[keyof M] : never;

/** Every capability declaration some tool of the registry requires. */
export type RequiredCapabilities<PAI> =
  PAI extends Pai<infer AGENTS>
    ? IsAny<AGENTS[keyof AGENTS]["tools"]> extends true
      ? never
      : Values<{ [A in keyof AGENTS]: AgentCapabilityMaps<AGENTS[A]> }[keyof AGENTS]>
    : never;

/** The `capabilities` option: required (and typed by facade) when a registered tool needs a capability. */
export type CapabilityBindingsOf<PAI> = [RequiredCapabilities<PAI>] extends [never]
  ? { capabilities?: Record<string, CapabilityBinding> }
  : {
      capabilities: {
        [C in RequiredCapabilities<PAI> as C extends Capability<infer NAME, any>
          ? NAME
          : never]: CapabilityBinding<FacadeOf<C>>;
      } & Record<string, CapabilityBinding>;
    };
