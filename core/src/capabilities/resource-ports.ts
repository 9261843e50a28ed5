import type { Duplex } from "node:stream";
import { PaiError } from "../errors/pai-error.ts";
import type { PreviewExposer } from "../previews/port-preview.ts";
import type { PreviewRegistry } from "../previews/preview-registry.ts";
import type { LeaseScope } from "./lease-scope.ts";
import type { LeaseTable } from "./lease-table.ts";
import type { ResourceWaker } from "./resource-waker.ts";

/** What {@link ResourcePorts} reaches resources with. */
export interface ResourcePortsOptions {
  leases: LeaseTable;
  waker: ResourceWaker;
  /** The previews of this process, when it serves any. */
  previews: PreviewRegistry | undefined;
  /** Ends the use `runId` made of its leases (the manager's `endRun`). */
  endUse(runId: string): Promise<void>;
}

/** The ports of leased resources: connections to them, and the previews facades open of them. */
export class ResourcePorts {
  readonly #options: ResourcePortsOptions;

  constructor(options: ResourcePortsOptions) {
    this.#options = options;
  }

  /**
   * A new connection to `port` on the resource of `capability` in `scope`, woken first if it hibernates. Only a
   * lease this process holds is reached (a preview never provisions a resource). The connection counts as a use of
   * the lease (it does not hibernate while the connection is open); `scope.runId` names that use.
   * @throws PaiError `PREVIEW_NOT_FOUND` when the lease is not held here, `PREVIEW_UNREACHABLE` when the resource
   * cannot open ports or nothing listens on `port`
   */
  async open(capability: string, scope: LeaseScope, port: number): Promise<Duplex> {
    const { leases, waker, endUse } = this.#options;
    if (!leases.has(leases.addressOf(capability, scope).id))
      throw new PaiError("PREVIEW_NOT_FOUND", "the preview's resource is no longer held");
    let connection: Duplex | undefined;
    try {
      const resource = await waker.awake(capability, scope);
      if (!resource.openPort)
        throw new PaiError("PREVIEW_UNREACHABLE", `the ${capability} binding cannot open ports`);
      connection = await resource.openPort(port, scope.signal).catch((error: unknown) => {
        throw new PaiError(
          "PREVIEW_UNREACHABLE",
          `nothing answers on port ${port} in the ${capability}${causeOf(error)}`,
          { cause: error },
        );
      });
      connection.once("close", () => void endUse(scope.runId));
      return connection;
    } finally {
      if (!connection) await endUse(scope.runId);
    }
  }

  /** A lease ended (released, or let go to another process): its previews close. */
  leaseEnded(leaseId: string): void {
    this.#options.previews?.closeLease(leaseId);
  }

  /** How a facade of `capability` in `scope` opens previews of its ports, when this process serves previews. */
  exposerFor(capability: string, scope: LeaseScope): PreviewExposer | undefined {
    const { previews, leases } = this.#options;
    if (!previews) return undefined;
    return {
      expose: async (port, options) =>
        previews.expose(
          {
            capability,
            leaseId: leases.addressOf(capability, scope).id,
            threadId: scope.threadId,
            identityKey: scope.identityKey,
          },
          port,
          options,
        ),
    };
  }
}

/** `: <message>` of an error, for a message that goes on. */
function causeOf(error: unknown): string {
  const message = error instanceof Error ? error.message : "";
  return message ? `: ${message}` : "";
}
