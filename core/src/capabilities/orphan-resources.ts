/**
 * Resources of leases this process ended without reattaching them, by capability: the binding removes them at
 * its next reconcile (or at close), whatever owner they are labelled with.
 */
export class OrphanResources {
  readonly #byCapability = new Map<string, Set<string>>();

  add(capability: string, resourceId: string): void {
    let orphans = this.#byCapability.get(capability);
    if (!orphans) {
      orphans = new Set();
      this.#byCapability.set(capability, orphans);
    }
    orphans.add(resourceId);
  }

  /** The orphans of `capability` now. */
  of(capability: string): string[] {
    return [...(this.#byCapability.get(capability) ?? [])];
  }

  /** Forgets the orphans the binding of `capability` was asked to remove. */
  forget(capability: string, reaped: readonly string[]): void {
    const orphans = this.#byCapability.get(capability);
    for (const resourceId of reaped) orphans?.delete(resourceId);
    if (orphans?.size === 0) this.#byCapability.delete(capability);
  }
}
