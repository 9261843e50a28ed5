/**
 * The `pai.*` labels every pool container carries. Docker labels are immutable after create, so the lease key
 * of a leased container is not a label: the pool records it in its own map and on the lease.
 */
export const poolLabels = {
  /** `"true"` on every container PAI created. */
  managed: "pai.managed",
  /** The pool id (`createContainerPool({ poolId })`); `reapStrays` only touches its own pool's containers. */
  pool: "pai.pool",
  /** `specHash(spec)` of the spec the container was created from. */
  spec: "pai.spec",
  /** A random id of the pool object that created the container, so `reapStrays` spares its own creations. */
  instance: "pai.instance",
  /**
   * The owner (runtime process) that created the container (`createContainerPool({ ownerId })`). Labels are
   * immutable: a container taken over by another owner keeps its creator's id, so the new owner's leases must
   * name it in `reapStrays({ keep })`.
   */
  owner: "pai.owner",
} as const;
