/** The process's identity and which owners are alive (see `createOwnerRegistry`). */
export interface OwnerLiveness {
  readonly ownerId: string;
  /** Owners whose heartbeat is fresh, this process included. */
  liveOwners(): Promise<ReadonlySet<string>>;
  /** Owners recorded in the store whose heartbeat is stale (never this process). */
  deadOwners(): Promise<ReadonlySet<string>>;
}
