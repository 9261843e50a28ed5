import type { ContainerDriver } from "@pai/pool";
import { PoolError } from "@pai/pool";
import { dockerSandbox } from "../docker-sandbox.ts";
import type { PaiSandboxPoolOptions } from "./fixture-options.ts";
import { openWaitingAgentSession, type WaitingAgentSession } from "./waiting-agent-session.ts";

/** A sandbox ready for a test: a fresh container from the binding, and its agent waiting to be relayed. */
export interface ReadySandbox {
  readonly containerId: string;
  readonly image: string;
  readonly agent: WaitingAgentSession;
  /** Ends the agent connection and removes the container. Idempotent. */
  release(): Promise<void>;
}

/** Options of {@link createReadySandboxPool}. */
export interface ReadySandboxPoolOptions {
  options: PaiSandboxPoolOptions;
  /** The binding's pool id (its `pai.pool` label): it names the run that owns the containers. */
  poolId: string;
  driver: ContainerDriver;
  /** Told about a failed background refill (no test was waiting for it). */
  onRefillError?: (error: unknown) => void;
}

/** A view of the pool for tests and logs. */
export interface ReadySandboxPoolMetrics {
  ready: number;
  preparing: number;
  leased: number;
  waiting: number;
}

/** `dockerSandbox`'s warm containers, each with a second agent session already started for relaying. */
export interface ReadySandboxPool {
  /**
   * A ready sandbox, at once when one is ready, else the next one prepared.
   * @throws PoolError `POOL_EXHAUSTED` past `pool.acquireTimeoutMs`, or the error that preparing it met.
   */
  acquire(signal?: AbortSignal): Promise<ReadySandbox>;
  /** Starts preparing up to `pool.min` sandboxes and resolves when they are ready. */
  warm(): Promise<void>;
  metrics(): ReadySandboxPoolMetrics;
  /** Fails waiting acquires, removes every container of the pool (ready and leased). */
  close(): Promise<void>;
}

interface Waiter {
  resolve(sandbox: ReadySandbox): void;
  reject(error: unknown): void;
}

/**
 * The run's supply of sandboxes for one set of fixture options. The containers come from a `dockerSandbox`
 * binding (so they are exactly what tools get: image, hardening, limits, network) whose own pool keeps none
 * idle; what this keeps warm is `pool.min` containers whose in-container agent has already said HELLO on a
 * connection of its own, so a test worker gets its first command through in a round trip or two instead of a
 * `docker exec`. `pool.max` bounds ready, preparing and leased sandboxes together.
 */
export function createReadySandboxPool(options: ReadySandboxPoolOptions): ReadySandboxPool {
  const { driver } = options;
  const min = options.options.pool?.min ?? 1;
  const max = options.options.pool?.max ?? 10;
  const acquireTimeoutMs = options.options.pool?.acquireTimeoutMs ?? 30_000;
  const binding = dockerSandbox({
    ...options.options,
    pool: { min: 0, max, acquireTimeoutMs },
    poolId: options.poolId,
    lifetime: "run",
    driver,
  });
  const closing = new AbortController();
  const ready: ReadySandbox[] = [];
  const waiters: Waiter[] = [];
  const preparations = new Set<Promise<void>>();
  let leased = 0;
  let sequence = 0;
  let closed = false;

  async function prepare(): Promise<ReadySandbox> {
    const provisioned = await binding.provision({
      leaseKey: `run:vitest-${++sequence}`,
      lifetime: "run",
      signal: closing.signal,
    });
    try {
      const agent = await openWaitingAgentSession({
        driver,
        containerId: provisioned.resourceId,
        signal: closing.signal,
      });
      let released: Promise<void> | undefined;
      return {
        containerId: provisioned.resourceId,
        image: binding.image ?? "",
        agent,
        release() {
          released ??= (async () => {
            agent.close();
            await provisioned.release();
          })();
          return released;
        },
      };
    } catch (error) {
      await provisioned.release();
      throw error;
    }
  }

  function hand(sandbox: ReadySandbox): ReadySandbox {
    leased++;
    let returned = false;
    const release = () => {
      if (!returned) {
        returned = true;
        leased--;
        fill();
      }
      return sandbox.release();
    };
    return { ...sandbox, release };
  }

  /** Starts preparations until ready + preparing covers `min` plus the waiters, within `max`. */
  function fill(): void {
    while (
      !closed &&
      ready.length + preparations.size < min + waiters.length &&
      ready.length + preparations.size + leased < max
    ) {
      const preparation = prepare().then(
        (sandbox) => {
          preparations.delete(preparation);
          const waiter = waiters.shift();
          if (closed) void sandbox.release();
          else if (waiter) waiter.resolve(hand(sandbox));
          else ready.push(sandbox);
          fill();
        },
        (error: unknown) => {
          preparations.delete(preparation);
          if (closed) return;
          // A waiting test gets the failure; a refill nobody waits for is reported and not retried until the
          // next acquire, so a broken image does not loop.
          const waiter = waiters.shift();
          if (waiter) waiter.reject(error);
          else options.onRefillError?.(error);
          if (waiters.length > 0) fill();
        },
      );
      preparations.add(preparation);
    }
  }

  function takeReady(): ReadySandbox | undefined {
    for (let sandbox = ready.shift(); sandbox; sandbox = ready.shift()) {
      if (sandbox.agent.alive) return sandbox;
      void sandbox.release().catch(() => {});
    }
    return undefined;
  }

  return {
    async acquire(signal) {
      if (closed) throw new PoolError("POOL_CLOSED", "the test run's sandbox pool is closed");
      signal?.throwIfAborted();
      const sandbox = takeReady();
      if (sandbox) {
        const handed = hand(sandbox);
        fill();
        return handed;
      }
      return new Promise<ReadySandbox>((resolve, reject) => {
        const timer = setTimeout(() => {
          settle();
          reject(
            new PoolError(
              "POOL_EXHAUSTED",
              `No sandbox within ${acquireTimeoutMs} ms (${leased} handed out, ${preparations.size} being prepared, max ${max})`,
              { details: { leased, preparing: preparations.size, max, acquireTimeoutMs } },
            ),
          );
        }, acquireTimeoutMs);
        const onAbort = () => {
          settle();
          reject(signal?.reason);
        };
        const waiter: Waiter = {
          resolve(sandbox) {
            settle();
            if (signal?.aborted) {
              void sandbox.release().catch(() => {});
              reject(signal.reason);
            } else resolve(sandbox);
          },
          reject(error) {
            settle();
            reject(error);
          },
        };
        function settle() {
          clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
          const index = waiters.indexOf(waiter);
          if (index >= 0) waiters.splice(index, 1);
        }
        signal?.addEventListener("abort", onAbort, { once: true });
        waiters.push(waiter);
        fill();
      });
    },
    async warm() {
      fill();
      await Promise.all(preparations);
    },
    metrics: () => ({ ready: ready.length, preparing: preparations.size, leased, waiting: waiters.length }),
    async close() {
      if (closed) return;
      closed = true;
      closing.abort(new PoolError("POOL_CLOSED", "the test run's sandbox pool is closed"));
      for (const waiter of [...waiters]) {
        waiter.reject(new PoolError("POOL_CLOSED", "the test run's sandbox pool is closed"));
      }
      await Promise.allSettled([...preparations]);
      await Promise.allSettled(ready.splice(0).map((sandbox) => sandbox.release()));
      await binding.close();
    },
  };
}
