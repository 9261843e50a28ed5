import type { Duplex } from "node:stream";
import type { AgentClient } from "../agent-client.ts";
import type { ConnectionAudience } from "./connection-audience.ts";
import type { EgressChannel } from "./egress-channel.ts";
import type { EgressPolicy } from "./egress-policy.ts";
import type { EgressProxy } from "./egress-proxy.ts";
import { proxiedDuplex } from "./proxied-duplex.ts";

/** The port the egress proxy listens on inside a container (its own loopback). */
export const EGRESS_PROXY_PORT = 3128;

const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "::1"];

/**
 * The environment that points a container's programs at the egress proxy: `HTTP_PROXY`, `HTTPS_PROXY`,
 * `ALL_PROXY` (and their lowercase twins, which curl and Python read), pip's `PIP_PROXY` and npm's
 * `npm_config_proxy` / `npm_config_https_proxy`. `NO_PROXY` keeps the container's own loopback direct, except
 * for a loopback host an allow entry names exactly (`127.0.0.1:3141`): that one means the host's, through the
 * proxy.
 */
export function egressEnvironment(policy: EgressPolicy): Record<string, string> {
  const proxy = `http://127.0.0.1:${EGRESS_PROXY_PORT}`;
  const direct = LOOPBACK_NAMES.filter((host) => !policy.exactHosts.includes(host)).join(",");
  return {
    HTTP_PROXY: proxy,
    HTTPS_PROXY: proxy,
    ALL_PROXY: proxy,
    NO_PROXY: direct,
    http_proxy: proxy,
    https_proxy: proxy,
    all_proxy: proxy,
    no_proxy: direct,
    PIP_PROXY: proxy,
    npm_config_proxy: proxy,
    npm_config_https_proxy: proxy,
    npm_config_noproxy: direct,
  };
}

/**
 * Makes the container's agent listen on `127.0.0.1:EGRESS_PROXY_PORT` and serves every connection there with
 * `proxy`, reporting it to the runs in flight when it opened. Call it on every (re)connection of the agent.
 *
 * With a `channel` (an engine on this machine; see `prepareEgressChannel`) the agent relays each connection to
 * this process's egress relay, presenting a token issued here and handed to it over its own connection (never
 * in the environment or a file), admitted until the agent's connection ends; the bytes then bypass the agent's
 * exec stream and this process (the relay splices them). Without one, or when the agent cannot reach the
 * socket, connections are tunnelled in frames over that stream. Either way they reach the same `proxy.handle`:
 * the same policy, limits, events and closing.
 */
export async function serveEgress(options: {
  client: AgentClient;
  proxy: EgressProxy;
  audience: ConnectionAudience;
  channel?: EgressChannel | undefined;
  signal?: AbortSignal | undefined;
}): Promise<number> {
  const { client, proxy, audience, channel } = options;
  const admission = channel?.relay.admit((connection) =>
    proxy.handle(connection, { report: audience.snapshot(), channel: "socket" }),
  );
  if (admission) void client.whenClosed.then(admission.revoke);
  try {
    return await client.listen({
      port: EGRESS_PROXY_PORT,
      onConnection: (stream: Duplex) =>
        proxy.handle(proxiedDuplex(stream), { report: audience.snapshot(), channel: "tunnel" }),
      ...(admission && channel
        ? { hostSocket: { path: channel.containerPath, token: admission.token } }
        : {}),
      signal: options.signal,
    });
  } catch (error) {
    admission?.revoke();
    throw error;
  }
}
