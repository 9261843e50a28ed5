import type { CapabilityBinding } from "./capability-binding.ts";
import type { LeaseReconciler } from "./lease-reconciler.ts";
import type { OwnerLiveness } from "./owner-liveness.ts";

/** What a {@link BindingStarter} starts and reconciles. */
export interface BindingStarterOptions {
  bindings: ReadonlyMap<string, CapabilityBinding>;
  owners: OwnerLiveness;
  reconciler: LeaseReconciler;
  /** Told when a binding's first reconcile fails (the binding is used anyway). */
  onError: (error: unknown) => void;
}

/**
 * Starts each binding once, before its first provisioning (or all at once with {@link startAll}): warms it with
 * this process's owner id, then reconciles its recorded leases. The periodic reconcile covers the bindings whose
 * start finished.
 */
export class BindingStarter {
  readonly #bindings: ReadonlyMap<string, CapabilityBinding>;
  readonly #owners: OwnerLiveness;
  readonly #reconciler: LeaseReconciler;
  readonly #onError: (error: unknown) => void;
  readonly #started = new Map<string, Promise<void>>();
  /** Bindings whose start finished: the periodic reconcile covers these. */
  readonly #ready = new Set<CapabilityBinding>();

  constructor(options: BindingStarterOptions) {
    this.#bindings = options.bindings;
    this.#owners = options.owners;
    this.#reconciler = options.reconciler;
    this.#onError = options.onError;
  }

  /**
   * Starts a binding once: warms it (with this process's owner id), then reconciles its recorded leases (a failure
   * there goes to `onError`: the periodic reconcile tries again). A start that fails is tried again next time.
   */
  start(binding: CapabilityBinding): Promise<void> {
    let started = this.#started.get(binding.capability);
    if (!started) {
      started = (async () => {
        await binding.start?.({ ownerId: this.#owners.ownerId });
        await this.#reconciler
          .reconcile(binding, await this.#owners.liveOwners(), await this.#owners.deadOwners())
          .catch(this.#onError);
        this.#ready.add(binding);
      })();
      this.#started.set(binding.capability, started);
      started.catch(() => this.#started.delete(binding.capability));
    }
    return started;
  }

  /** Starts every binding now instead of on first use. */
  async startAll(): Promise<void> {
    await Promise.all([...this.#bindings.values()].map((binding) => this.start(binding)));
  }

  /**
   * Reconciles every started binding (see `LeaseReconciler.reconcile`). `live`: the owners alive now; `dead`: the
   * owners known dead.
   * @returns true when every binding is started and has dealt with the `dead` owners; false while one is not
   * started, and when there are no bindings.
   * @throws AggregateError of the bindings that failed (the others were still reconciled)
   */
  async reconcileStarted(live: ReadonlySet<string>, dead: ReadonlySet<string>): Promise<boolean> {
    const ready = [...this.#ready];
    const errors: unknown[] = [];
    for (const binding of ready) {
      await this.#reconciler.reconcile(binding, live, dead).catch((error: unknown) => errors.push(error));
    }
    if (errors.length > 0) throw new AggregateError(errors, "reconciling capability bindings failed");
    return ready.length > 0 && ready.length === this.#bindings.size;
  }
}
