import type { Socket } from "node:net";
import type { ContainerDriver } from "@pai/pool";
import type { AgentDialBack } from "./agent-connect.ts";
import { type AgentDialSocket, createAgentDialSocket } from "./agent-dial-socket.ts";
import { AGENT_PATH } from "./agent-volume.ts";
import {
  EGRESS_SOCKET_DIRECTORY,
  egressSocketHostDirectory,
  engineSharesHostSocketDirectory,
  ownHostSocketDirectory,
} from "./host-socket-directory.ts";

/**
 * Containers of an engine on this machine whose agent is their main process and dials this process (see
 * `pai-agent --dial`), so a fresh container needs no `docker exec` — engine work that bounds a burst of new
 * sandboxes; a container this process hibernated dials again when it wakes. Containers adopted by another process
 * or after a restart start their agent with `docker exec`.
 */
export interface AgentDial {
  /** The container's main process (`ContainerSpec.cmd`). */
  readonly cmd: readonly string[];
  /** The read-only mount of the host socket directory (`ContainerSpec.hostDirectories`). */
  readonly mount: { source: string; target: string };
  /** The environment to create one container with (never part of a spec): the socket's path and a fresh token. */
  env(): Record<string, string>;
  /** Admits the token of `env` once more, right before its (stopped) container starts again: a wake dials in too. */
  renew(env: Readonly<Record<string, string>>): void;
  /**
   * The connection of the agent of the container created with `env`; see `AgentDialSocket.connection`.
   * Rejects when `env` holds no token.
   */
  connection(
    env: Readonly<Record<string, string>>,
    options: { timeoutMs: number; signal?: AbortSignal | undefined },
  ): Promise<Socket>;
  /**
   * A fresh way back for one connection to a port of a container made with this dial (it mounts the socket), for
   * `AgentClient.connect`'s `hostSocket`; see `AgentDialSocket.dialBack`.
   */
  dialBack(): AgentDialBack;
}

let shared: Promise<AgentDialSocket | undefined> | undefined;

/** This process's dial socket, created once; `undefined` when the directory cannot be made safely. */
function sharedDialSocket(): Promise<AgentDialSocket | undefined> {
  shared ??= (async () => {
    const directory = await ownHostSocketDirectory();
    return directory ? await createAgentDialSocket({ directory }).catch(() => undefined) : undefined;
  })();
  return shared;
}

/**
 * The agent dial for containers of `driver`'s engine, or `undefined` when that engine does not share this
 * machine's filesystem (see `engineSharesHostSocketDirectory`) or the directory cannot be made safely.
 */
export async function prepareAgentDial(options: {
  driver: ContainerDriver;
  /** Any local image: it only hosts the probe container. */
  image: string;
  /** See `engineSharesHostSocketDirectory`. */
  engineKey?: string | undefined;
  /** The agent binary inside the container. @default "/opt/pai/pai-agent" */
  agentPath?: string | undefined;
}): Promise<AgentDial | undefined> {
  const socket = await sharedDialSocket();
  if (!socket) return undefined;
  const directory = egressSocketHostDirectory();
  if (!(await engineSharesHostSocketDirectory({ ...options, directory }))) {
    return undefined;
  }
  const containerPath = `${EGRESS_SOCKET_DIRECTORY}/${socket.fileName}`;
  return {
    cmd: [options.agentPath ?? AGENT_PATH, "--dial"],
    mount: { source: directory, target: EGRESS_SOCKET_DIRECTORY },
    env: () => ({ PAI_AGENT_DIAL: containerPath, PAI_AGENT_TOKEN: socket.admit() }),
    renew: (env) => {
      if (env.PAI_AGENT_TOKEN) socket.readmit(env.PAI_AGENT_TOKEN);
    },
    connection: (env, connectionOptions) => socket.connection(env.PAI_AGENT_TOKEN ?? "", connectionOptions),
    dialBack: () => socket.dialBack(containerPath),
  };
}
