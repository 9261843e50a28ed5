import {
  type EgressNetworkOptions,
  type EgressPolicy,
  parseEgressPolicy,
  wantsEgressChannel,
} from "@pai/container-agent";

/** A Docker binding's `network` option, checked: what the containers' network is and what their egress proxy allows. */
export interface BindingNetwork {
  /** The containers' network: none (only `lo`), or the host's namespace (`"unsafe-host"`). */
  mode: "none" | "host";
  /** The egress proxy's options, when the binding allows some egress. */
  egress: EgressNetworkOptions | undefined;
  /** The allow list, parsed, when the binding allows some egress. */
  policy: EgressPolicy | undefined;
  /** Whether egress takes the fast channel where there is one (see `wantsEgressChannel`). */
  fastEgress: boolean;
}

/**
 * Checks a binding's `network` (`"none"`, `"unsafe-host"` or `{ allow: [...] }`).
 * @throws what `invalid` makes for any other value; PaiError `INVALID_ARGUMENT` for a bad allow list or channel
 */
export function parseBindingNetwork(
  network: "none" | "unsafe-host" | EgressNetworkOptions,
  invalid: () => Error,
): BindingNetwork {
  if (network !== "none" && network !== "unsafe-host" && typeof network !== "object") throw invalid();
  const egress = typeof network === "object" ? network : undefined;
  return {
    mode: network === "unsafe-host" ? "host" : "none",
    egress,
    policy: egress ? parseEgressPolicy(egress.allow) : undefined,
    fastEgress: egress ? wantsEgressChannel(egress) : false,
  };
}
