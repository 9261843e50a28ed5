import type { ConnectionAudience } from "@pai/container-agent";
import type { ProvisionedResource } from "@pai/core";
import type { PoolError } from "@pai/pool";

/** What a run hands a resource's `bind`: its signal (the run's Stop) and where its connections are reported. */
export type BindScope = Parameters<NonNullable<ProvisionedResource["bind"]>>[0];

/** The positions of a method's arguments that are options taking a `signal` (`{ signal?: AbortSignal }`). */
type SignalOptionsAt<METHOD> = METHOD extends (...args: infer ARGS) => unknown
  ? {
      [I in keyof ARGS]-?: I extends `${infer N extends number}`
        ? [NonNullable<ARGS[I]>] extends [{ signal?: AbortSignal | undefined }]
          ? [NonNullable<ARGS[I]>] extends [readonly unknown[] | string | number | boolean]
            ? never
            : N
          : never
        : never;
    }[number]
  : never;

/** How {@link bindFacade} reaches one member of a facade. */
export interface FacadeCall<METHOD = unknown> {
  /** The position of the method's options argument, whose `signal` the run's signal joins. Absent: no signal. */
  readonly options?: SignalOptionsAt<METHOD>;
  /**
   * For a method whose work outlives its promise (a spawned process): what settles once the work is done. The run
   * is told of the connections made until then.
   */
  readonly until?: (
    result: Awaited<METHOD extends (...args: never[]) => infer R ? R : never>,
  ) => PromiseLike<unknown>;
  /**
   * For a member that needs what the run's scope offers (its `previews`): the member the view calls instead of the
   * facade's own, made from the scope (the previews absent where the runtime serves none, or in a view made outside
   * a runtime).
   */
  readonly withScope?: (scope: FacadeScope) => METHOD;
}

/** What a run's scope offers a facade's members beyond its signal (see {@link FacadeCall.withScope}). */
export type FacadeScope = Pick<BindScope, "previews">;

/**
 * Every member of a facade, declared (`{ runCommand: { options: 0 }, info: {} }`): the type checker refuses one
 * left out, a name the facade does not have and an `options` position that is not an options argument.
 */
export type FacadeCalls<FACADE> = { readonly [K in keyof FACADE & string]: FacadeCall<FACADE[K]> };

/** A lease whose loss {@link bindFacade} reports: a multi-engine pool's `EngineLease`. */
export interface LostWatch {
  /** Aborted, with the `CONTAINER_LOST` error as its reason, once the container is lost. */
  readonly lostSignal: AbortSignal;
  /**
   * After a call failed with `error`: resolves with the `CONTAINER_LOST` error when the container turns out to be
   * lost (see `EngineLease.confirmLost`).
   */
  confirmLost(error: unknown): Promise<PoolError | undefined>;
}

/** Options of {@link bindFacade}. */
export interface BindFacadeOptions<FACADE> {
  /** The facade's members: only these are in the view. */
  calls: FacadeCalls<FACADE>;
  /** The run's signal: it joins the signal of every call that takes options. */
  signal?: AbortSignal | undefined;
  /** The lease the facade runs on: once lost, calls fail with its `CONTAINER_LOST` error. */
  lost?: LostWatch | undefined;
  /** Told of every connection the resource makes while a call of this view runs (see `until`). */
  report?: BindScope["report"];
  /** Who is told of the resource's connections (one per container); needed by `report`. */
  audience?: ConnectionAudience | undefined;
  /** The run's previews of the resource's ports, for the members that declare `withScope`. */
  previews?: BindScope["previews"] | undefined;
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

/** `args` with the options at `position` also aborted by `signal` (the caller's own signal still works). */
function withSignal(args: unknown[], position: number, signal: AbortSignal): unknown[] {
  const joined = [...args];
  const options = joined[position] as { signal?: AbortSignal } | undefined;
  joined[position] = {
    ...options,
    signal: options?.signal ? AbortSignal.any([options.signal, signal]) : signal,
  };
  return joined;
}

/**
 * `result`, or the lease's `CONTAINER_LOST` error when it is lost while the call runs, or when the call failed
 * because its engine has just gone away.
 */
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

/** Keeps `report` told of the container's connections until `result` (and what `call.until` picks) settles. */
function reportUntilSettled(result: unknown, call: FacadeCall, leave: () => void): void {
  Promise.resolve(result).then((value) => {
    const held = (call.until as ((value: unknown) => PromiseLike<unknown>) | undefined)?.(value);
    if (held) held.then(leave, leave);
    else leave();
  }, leave);
}

/**
 * The one view a call goes through between a capability's tools and its facade (a sandbox's, a browser's): each
 * declared member, with
 *
 * - **the run's signal** joined to the call's own (`options`), so a user's Stop reaches a call that passed none;
 * - **the lost lease** reported: once the lease is lost every call rejects at once with its `CONTAINER_LOST`
 *   error (naming the engine), a call in flight when it is lost rejects with it right then, and a call that fails
 *   because the engine has just gone away is answered with it once the health check says so (other failures pass
 *   through unchanged and at once);
 * - **connections reported**: every connection the container makes while the call runs (for a spawned process,
 *   until it ends: `until`) is told to `report`;
 * - **the run's previews** handed to the members that declare `withScope` (a sandbox's `exposePort`).
 *
 * A member that is not a function is copied as it is. A method that returns no promise is passed through until the
 * lease is lost; then every method returns a rejected promise.
 *
 * @example
 * const forThisRun = bindFacade(facade, { calls: sandboxCalls, signal: runSignal, lost: lease });
 * await forThisRun.runCommand({ command: "sleep 60" }); // Stop → terminationReason "abort"
 */
export function bindFacade<FACADE extends object>(
  facade: FACADE,
  options: BindFacadeOptions<FACADE>,
): FACADE {
  const { signal, lost, report, audience, previews } = options;
  const scope: FacadeScope = previews ? { previews } : {};
  const view: Record<string, unknown> = {};
  for (const [name, call] of Object.entries(options.calls) as Array<[string, FacadeCall]>) {
    const member: unknown = call.withScope
      ? call.withScope(scope)
      : (facade as Record<string, unknown>)[name];
    if (typeof member !== "function") {
      view[name] = member;
      continue;
    }
    const position = call.options as number | undefined;
    view[name] = (...args: unknown[]) => {
      // Facade methods are async: a lost lease is a rejection, not a synchronous throw.
      if (lost?.lostSignal.aborted) return Promise.reject(lost.lostSignal.reason);
      const leave = report && audience ? audience.enter(report) : undefined;
      let result: unknown;
      try {
        result = member.apply(
          facade,
          signal && position !== undefined ? withSignal(args, position, signal) : args,
        );
      } catch (error) {
        leave?.();
        throw error;
      }
      if (leave) reportUntilSettled(result, call, leave);
      return lost && isThenable(result) ? settleOrLose(result, lost) : result;
    };
  }
  return view as FACADE;
}
