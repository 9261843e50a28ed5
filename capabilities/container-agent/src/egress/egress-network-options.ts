import type { EgressAllowEntry } from "./egress-policy.ts";

/** A binding's `network` option when the container may reach anything: the allow list and the limits. */
export interface EgressNetworkOptions {
  /** Where the container may connect; see `EgressAllowEntry`. */
  allow: readonly EgressAllowEntry[];
  /** Connections open at once. @default 32 */
  maxConnections?: number;
  /** Bytes both ways over the container's life; when spent, its connections close. @default 1073741824 */
  maxBytes?: number;
  /**
   * How connections reach the host. `"auto"`: through a unix socket of this process's egress relay in a host
   * directory the container mounts read-only, when the engine shares this machine's filesystem and the relay runs
   * (each connection presents a per-container token; the bytes move in the kernel), else `"tunnel"`. `"tunnel"`: in frames over the agent's `docker exec` stream (slower;
   * no host directory is mounted).
   * @default "auto"
   */
  channel?: "auto" | "tunnel";
}
