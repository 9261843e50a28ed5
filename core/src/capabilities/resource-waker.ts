import type { ThreadStore } from "../threads/thread-store.ts";
import { traceWake } from "./acquire-span.ts";
import type { ProvisionedResource, ResourceRestart } from "./capability-binding.ts";
import type { LeaseProvisioner } from "./lease-provisioner.ts";
import type { LeaseScope } from "./lease-scope.ts";
import type { LeaseAddress, LeaseTable } from "./lease-table.ts";
import { reportProvisionFailure } from "./report-provision-failure.ts";

/** Where a {@link ResourceWaker} gets resources and records a successor. */
export interface ResourceWakerOptions {
  store: ThreadStore;
  /** This process's owner id. */
  ownerId: string;
  leases: LeaseTable;
  provisioner: LeaseProvisioner;
}

/**
 * Makes sure the resource a facade call reaches runs. Before every call it wakes a hibernated resource (the scope
 * is told `woken`), has one that stopped on its own started again (`restarted` with the reason; a successor that
 * took its files over is recorded on the lease), and replaces one the binding removed while it hibernated.
 */
export class ResourceWaker {
  readonly #store: ThreadStore;
  readonly #ownerId: string;
  readonly #leases: LeaseTable;
  readonly #provisioner: LeaseProvisioner;

  constructor(options: ResourceWakerOptions) {
    this.#store = options.store;
    this.#ownerId = options.ownerId;
    this.#leases = options.leases;
    this.#provisioner = options.provisioner;
  }

  /**
   * The resource for `capability` in `scope`, running: a hibernated one is woken (reported as `woken`), one that
   * stopped on its own is started again (reported as `restarted`), one the binding removed while hibernated is
   * replaced by a new one.
   */
  async awake(capability: string, scope: LeaseScope): Promise<ProvisionedResource> {
    const address = this.#leases.addressOf(capability, scope);
    for (;;) {
      const resource = await this.#provisioner.acquire(capability, scope);
      if (!resource.hibernation) return resource;
      const startedAt = Date.now();
      const before = resource.resourceId;
      let woke: "running" | "woken" | "gone" | ResourceRestart;
      try {
        woke = await resource.hibernation.wake(scope.signal);
      } catch (error) {
        // No room to wake it, or a container that keeps stopping: the call is told why, as for a provisioning.
        if (!scope.signal.aborted) {
          const { lifetime } = address;
          const resourceId = resource.resourceId;
          reportProvisionFailure(scope, { capability, lifetime, error, startedAt, resourceId });
        }
        throw error;
      }
      if (woke === "gone") {
        await this.#dropGone(address, resource);
        continue;
      }
      if (woke === "running") return resource;
      if (woke === "woken") traceWake({ ...address, resourceId: resource.resourceId }, startedAt);
      if (woke !== "woken" && resource.resourceId !== before)
        await this.#recordSuccessor(address, resource, before);
      scope.onStatus?.({
        capability,
        lifetime: address.lifetime,
        status: woke === "woken" ? "woken" : "restarted",
        resourceId: resource.resourceId,
        durationMs: Date.now() - startedAt,
        ...(woke === "woken" ? {} : { reason: woke.reason }),
      });
      return resource;
    }
  }

  /** Records on its lease the new resource that took over a restarted one's files (its id and meta). */
  async #recordSuccessor(
    { capability, lifetime, key }: LeaseAddress,
    resource: ProvisionedResource,
    replaced: string,
  ): Promise<void> {
    const [record] = await this.#store.listLeases({ capability, lifetime, key });
    // A `run` lease has no record; a record of another resource or owner is not this lease's.
    if (record?.resourceId !== replaced || record.ownerId !== this.#ownerId) return;
    await this.#store.putLease({
      ...record,
      resourceId: resource.resourceId,
      meta: resource.meta ?? record.meta,
      lastUsedAt: Date.now(),
    });
  }

  /** Forgets a lease whose resource the binding removed while it hibernated (its record too). */
  async #dropGone(
    { capability, lifetime, key, id }: LeaseAddress,
    resource: ProvisionedResource,
  ): Promise<void> {
    const lease = this.#leases.get(id);
    if (lease?.settled !== resource) return; // another call replaced it already
    this.#leases.delete(id);
    await resource.release().catch(() => undefined);
    await this.#store.deleteLease(capability, lifetime, key);
  }
}
