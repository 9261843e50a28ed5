import { PaiError } from "@pai/core";
import type { ContainerDriver } from "@pai/pool";
import {
  EGRESS_SOCKET_DIRECTORY,
  egressSocketHostDirectory,
  engineSharesHostSocketDirectory,
  ownHostSocketDirectory,
} from "../host-socket-directory.ts";
import type { EgressNetworkOptions } from "./egress-network-options.ts";
import { createEgressRelay, type EgressRelay } from "./egress-relay.ts";

/**
 * The fast channel of a container's egress: the unix socket of this process's egress relay in a host directory
 * every egress container of the engine mounts read-only, to which the agent relays each proxy connection (see
 * `serveEgress`). Only for an engine that shares this machine's filesystem.
 */
export interface EgressChannel {
  /** The read-only mount for `ContainerSpec.hostDirectories`. */
  readonly mount: { source: string; target: string };
  /** This process's relay, listening there. */
  readonly relay: EgressRelay;
  /** The socket's path inside a container. */
  readonly containerPath: string;
}

/**
 * Whether a binding's `network` asks for the fast channel where there is one (`channel` is `"auto"` or unset).
 * @throws PaiError `INVALID_ARGUMENT` for another `channel`
 */
export function wantsEgressChannel(network: EgressNetworkOptions): boolean {
  const channel = network.channel ?? "auto";
  if (channel !== "auto" && channel !== "tunnel") {
    throw new PaiError(
      "INVALID_ARGUMENT",
      `network.channel is "auto" or "tunnel", got ${JSON.stringify(channel)}`,
    );
  }
  return channel === "auto";
}

let shared: Promise<EgressRelay | undefined> | undefined;

/**
 * This process's egress relay, started once (and again whenever it exits, see `createEgressRelay`); `undefined`
 * when the directory cannot be made safely, this package ships no relay for this machine, or it cannot be started
 * (containers then tunnel).
 */
function sharedEgressRelay(): Promise<EgressRelay | undefined> {
  shared ??= (async () => {
    const directory = await ownHostSocketDirectory();
    return directory ? await createEgressRelay({ directory }).catch(() => undefined) : undefined;
  })();
  return shared;
}

/**
 * The fast egress channel for containers of `driver`'s engine, or `undefined` when that engine does not share
 * this machine's filesystem (see `engineSharesHostSocketDirectory`) or this process's egress relay cannot run:
 * then connections travel in frames over the agent's exec stream.
 */
export async function prepareEgressChannel(options: {
  driver: ContainerDriver;
  /** Any local image: it only hosts the probe container. */
  image: string;
  /** See `engineSharesHostSocketDirectory`. */
  engineKey?: string | undefined;
}): Promise<EgressChannel | undefined> {
  const relay = await sharedEgressRelay();
  if (!relay) return undefined;
  const directory = egressSocketHostDirectory();
  if (!(await engineSharesHostSocketDirectory({ ...options, directory }))) return undefined;
  return {
    mount: { source: directory, target: EGRESS_SOCKET_DIRECTORY },
    relay,
    containerPath: `${EGRESS_SOCKET_DIRECTORY}/${relay.fileName}`,
  };
}
