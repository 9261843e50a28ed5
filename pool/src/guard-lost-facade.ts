import type { PoolError } from "./pool-error.ts";

/** What {@link guardLostFacade} watches: a lease of a multi-engine pool (`EngineLease`). */
export interface LostWatch {
  /** Aborted, with the `CONTAINER_LOST` error as its reason, once the container is lost. */
  readonly lostSignal: AbortSignal;
  /**
   * After a call failed with `error`: resolves with the `CONTAINER_LOST` error when the container turns out to
   * be lost (see `EngineLease.confirmLost`).
   */
  confirmLost(error: unknown): Promise<PoolError | undefined>;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

function isAbortError(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return name === "AbortError" || name === "TimeoutError";
}

async function settleOrLose(result: PromiseLike<unknown>, watch: LostWatch): Promise<unknown> {
  const { lostSignal } = watch;
  let onLost: (() => void) | undefined;
  const lost = new Promise<never>((_resolve, reject) => {
    onLost = () => reject(lostSignal.reason);
    lostSignal.addEventListener("abort", onLost, { once: true });
  });
  try {
    return await Promise.race([result, lost]);
  } catch (error) {
    if (lostSignal.aborted) throw lostSignal.reason;
    if (isAbortError(error)) throw error;
    // The call may have failed because the engine went away under it: then the lease is lost, and says so.
    throw (await watch.confirmLost(error).catch(() => undefined)) ?? error;
  } finally {
    if (onLost) lostSignal.removeEventListener("abort", onLost);
  }
}

/**
 * A view of `facade` (a sandbox's, a browser's) that reports a lost container instead of failing obscurely or
 * hanging: once the lease is lost every method rejects at once with the `CONTAINER_LOST` error (naming the
 * engine), a call in flight when it is lost rejects with it right then, and a call that fails because the engine
 * has just gone away is answered with it once the health check says so. Other failures pass through unchanged
 * and at once. Methods that return no promise are passed through
 * until the lease is lost; then every method returns a rejected promise.
 */
export function guardLostFacade<FACADE extends object>(facade: FACADE, watch: LostWatch): FACADE {
  const methods = new Map<PropertyKey, unknown>();
  return new Proxy(facade, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      let method = methods.get(property);
      if (!method) {
        method = (...args: unknown[]) => {
          // Facade methods are async: a lost lease is a rejection, not a synchronous throw.
          if (watch.lostSignal.aborted) return Promise.reject(watch.lostSignal.reason);
          const result: unknown = value.apply(target, args);
          return isThenable(result) ? settleOrLose(result, watch) : result;
        };
        methods.set(property, method);
      }
      return method;
    },
  });
}
