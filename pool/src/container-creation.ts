import type { ContainerRemoval } from "./container-removal.ts";
import { createCreateBackoff } from "./create-backoff.ts";
import type { PoolContainer } from "./pool-container.ts";
import type { PoolCore } from "./pool-core.ts";
import { createSemaphore } from "./semaphore.ts";

/** How the single-engine pool makes warm containers: create, start and set up, paced while creates fail. Internal. */
export interface ContainerCreation<STATE> {
  /**
   * Takes room within `max`, then creates, starts and sets up one container (an idle {@link PoolContainer} the pool
   * now holds), retrying failures with backoff. Resolves `undefined` once the pool closes; never rejects.
   */
  create(): Promise<PoolContainer<STATE> | undefined>;
  /** Containers being created right now. */
  readonly creating: number;
  /** Creates holding room within `max`: containers on their way to a waiting `acquire`. */
  readonly permitted: number;
  /** Failed create attempts since the pool was made. */
  readonly failures: number;
  /** Set while creates keep failing: the last create's error. */
  readonly failing: { error: unknown } | undefined;
}

/** The outcome of one create attempt. */
type Attempt<STATE> = { container: PoolContainer<STATE> } | "closed" | "failed";

/** Makes the creation part of a single-engine pool. */
export function createContainerCreation<STATE>(
  core: PoolCore<STATE>,
  removal: ContainerRemoval<STATE>,
): ContainerCreation<STATE> {
  const { driver, events, capacity, options } = core;
  const { spec } = core.settings;
  const backoff = createCreateBackoff(options.createBackoff);
  const createLimiter = createSemaphore(core.settings.maxConcurrentCreates);
  let creating = 0;
  let permitted = 0;
  let failures = 0;
  let lastError: unknown;

  async function create(): Promise<PoolContainer<STATE> | undefined> {
    const signal = core.closeSignal;
    try {
      await capacity.acquire(signal);
    } catch {
      return undefined;
    }
    let holdsPermit = true;
    permitted++;
    try {
      for (;;) {
        if (core.closed) return undefined;
        try {
          await backoff.turn(signal);
          await createLimiter.acquire(signal);
        } catch {
          return undefined;
        }
        const attempt = await attemptCreate(signal);
        if (attempt === "closed") return undefined;
        if (attempt !== "failed") {
          holdsPermit = false; // the container holds it now
          return attempt.container;
        }
      }
    } finally {
      permitted--;
      if (holdsPermit) capacity.release();
    }
  }

  /**
   * One attempt, holding a create slot (released once the engine's heavy work, create and start, is done): a failure
   * removes what it made, is reported and counts for the backoff.
   */
  async function attemptCreate(signal: AbortSignal): Promise<Attempt<STATE>> {
    creating++;
    const startedAt = performance.now();
    let id: string | undefined;
    let state: STATE | undefined;
    let setupDone = false;
    // The cap is on the engine's heavy work (create + start); `setup` mostly waits, so it runs outside it.
    let holdsCreateSlot = true;
    const releaseCreateSlot = () => {
      if (!holdsCreateSlot) return;
      holdsCreateSlot = false;
      createLimiter.release();
    };
    try {
      const createEnv = options.containerEnv?.create();
      const created = createEnv ? { ...spec, env: { ...spec.env, ...createEnv } } : spec;
      ({ id } = await driver.create(created, core.labels, { signal }));
      core.knownIds.add(id);
      if (options.beforeStart) await options.beforeStart({ containerId: id, driver, signal });
      await driver.start(id, { signal });
      releaseCreateSlot();
      state = options.setup
        ? await options.setup({
            containerId: id,
            driver,
            signal,
            adopted: false,
            ...(createEnv ? { createEnv } : {}),
          })
        : (undefined as STATE);
      setupDone = true;
      if (core.closed) {
        await removal.teardown(id, state as STATE);
        await removal.removeUnowned(id);
        return "closed";
      }
      backoff.succeeded();
      const container: PoolContainer<STATE> = {
        id,
        state: state as STATE,
        phase: "idle",
        dead: false,
        permit: true,
        hibernated: false,
        busy: true,
        lastUsedAt: Date.now(),
        made: { readyAt: performance.now(), createMs: Math.round(performance.now() - startedAt) },
        ...(createEnv ? { createEnv } : {}),
      };
      core.containers.set(id, container);
      events.emit("create", { containerId: id, durationMs: container.made!.createMs });
      return { container };
    } catch (error) {
      if (id !== undefined) {
        if (setupDone) await removal.teardown(id, state as STATE);
        await removal.removeUnowned(id);
      }
      if (core.closed) return "closed";
      failures++;
      lastError = error;
      backoff.failed();
      events.emit("error", {
        operation: "create",
        error,
        ...(id !== undefined ? { containerId: id } : {}),
      });
      return "failed";
    } finally {
      creating--;
      releaseCreateSlot();
    }
  }

  return {
    create,
    get creating() {
      return creating;
    },
    get permitted() {
      return permitted;
    },
    get failures() {
      return failures;
    },
    get failing() {
      return backoff.consecutiveFailures > 0 && lastError !== undefined ? { error: lastError } : undefined;
    },
  };
}
