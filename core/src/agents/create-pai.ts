import type { UIMessage } from "ai";
import { PaiError } from "../errors/pai-error.ts";
import {
  type AgentManifest,
  type PaiManifest,
  toolManifest,
  toolSourceManifest,
} from "../manifest/manifest.ts";
import type { ChildrenOf, InputOf, OutputOf } from "../tools/define-tool.ts";
import type { AgentDefinition, AnyAgentDefinition } from "./define-agent.ts";
import {
  type NormalizedRegistration,
  normalizeRegistrations,
  splitToolSources,
} from "./tool-registration.ts";
import type { ToolSource } from "./tool-source.ts";

/** A registered agent with its normalized tool registrations. */
export interface RegisteredAgent {
  id: string;
  definition: AnyAgentDefinition;
  registrations: ReadonlyMap<string, NormalizedRegistration>;
  /** Its tool sources by key (`defineToolSource`): tools resolved per run and per step. */
  sources: ReadonlyMap<string, ToolSource>;
}

/** The registry of agents. `ctx.agentId` is the key an agent is registered under. */
export interface Pai<AGENTS extends Record<string, AnyAgentDefinition> = Record<string, AnyAgentDefinition>> {
  readonly agents: AGENTS;
  /** The registered agent, or `UNKNOWN_AGENT`. */
  agent(agentId: string): RegisteredAgent;
  /**
   * JSON description of every agent and tool: keys, ids, descriptions, JSON Schemas, `enabled` gates, and each
   * agent's tool sources (whose tools are only known at run time).
   */
  manifest(): PaiManifest;
}

/**
 * Creates the agent registry. Pure apart from normalizing registrations: no I/O.
 * @example
 * export const pai = createPai({ agents: { assistant: assistantAgent } });
 */
export function createPai<AGENTS extends Record<string, AnyAgentDefinition>>(options: {
  agents: AGENTS;
}): Pai<AGENTS> {
  const registered = new Map<string, RegisteredAgent>();
  for (const [id, definition] of Object.entries(options.agents)) {
    const { entries, sources } = splitToolSources(definition.tools as Record<string, unknown>);
    const registrations = new Map(normalizeRegistrations(id, entries).map((r) => [r.name, r]));
    registered.set(id, { id, definition, registrations, sources });
  }
  return {
    agents: options.agents,
    agent(agentId) {
      const agent = registered.get(agentId);
      if (!agent) {
        throw new PaiError("UNKNOWN_AGENT", `no agent is registered as "${agentId}"`, {
          details: { agentId, known: [...registered.keys()] },
        });
      }
      return agent;
    },
    manifest() {
      const agents: AgentManifest[] = [...registered.values()].map((agent) => ({
        id: agent.id,
        name: agent.definition.name ?? agent.id,
        tools: [...agent.registrations.values()].map(toolManifest),
        toolSources: [...agent.sources].map(([key, source]) => toolSourceManifest(key, source)),
      }));
      return { version: 1, agents };
    },
  };
}

type ToolOfRegistration<R> = R extends { tool: infer TOOL } ? TOOL : R;

/**
 * Where a call of `TOOL`, registered as `NAME`, can wait for an answer: `[NAME]` itself, or a nested tool at any
 * depth (`["code", "approve"]`) — a pending action's `path`. A wait inside a subagent (`inner.subagent` on the
 * action) goes on past these with the subagent's agent id and its own path, which this type cannot know.
 */
export type InferToolPath<NAME extends string, TOOL> = [NAME] | NestedPaths<[NAME], ChildrenOf<TOOL>>;
type NestedPaths<PREFIX extends string[], CHILDREN> = {
  [K in keyof CHILDREN & string]: [...PREFIX, K] | NestedPaths<[...PREFIX, K], ChildrenOf<CHILDREN[K]>>;
}[keyof CHILDREN & string];

/**
 * The tool contract of an agent: registration key → `{ input, output, path }`, for typing UI tool parts (and, with
 * `path`, the pending actions of each tool's calls).
 */
export type InferAgentTools<AGENT> =
  AGENT extends AgentDefinition<any, any, infer TOOLS>
    ? {
        [K in keyof TOOLS & string]: {
          input: InputOf<ToolOfRegistration<TOOLS[K]>>;
          output: OutputOf<ToolOfRegistration<TOOLS[K]>>;
          path: InferToolPath<K, ToolOfRegistration<TOOLS[K]>>;
        };
      }
    : never;

/** Metadata PAI puts on assistant messages. */
export interface PaiMessageMetadata {
  runId?: string;
  agentId?: string;
}

/** The `UIMessage` type of an agent's thread, with tool parts typed from its contract. */
export type InferAgentUIMessage<AGENT> = UIMessage<
  PaiMessageMetadata,
  Record<string, unknown>,
  InferAgentTools<AGENT>
>;

/** The contract of every agent in a registry: agent id → tool contract. */
export type InferPaiContract<PAI> =
  PAI extends Pai<infer AGENTS> ? { [K in keyof AGENTS]: InferAgentTools<AGENTS[K]> } : never;
