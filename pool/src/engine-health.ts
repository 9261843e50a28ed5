import { unreachableError } from "./engine-errors.ts";
import type { EngineRecord } from "./engine-record.ts";
import type { EngineGate } from "./guard-engine-driver.ts";
import type { MultiEnginePoolEventMap } from "./multi-engine-pool-events.ts";
import type { PoolError } from "./pool-error.ts";
import type { PoolEventEmitter } from "./pool-events.ts";

/** How a multi-engine pool watches its engines. */
export interface EngineCheckOptions {
  /** Time between two health checks (a ping) of an engine that answers. @default 5000 */
  intervalMs?: number;
  /**
   * Deadline of one health check. An engine that refuses the connection (or has no socket) is unreachable at
   * once; one that does not answer in time is unreachable after two such checks in a row (a busy engine is slow,
   * not gone).
   * @default 10000
   */
  timeoutMs?: number;
  /**
   * Time between health checks of an unreachable engine: `initialMs` after the first failure, doubling up to
   * `maxMs`. The first check that answers brings the engine back.
   * @default { initialMs: 500, maxMs: 30000 }
   */
  backoff?: { initialMs?: number; maxMs?: number };
  /** How often an engine's `docker info` (host memory, CPUs, running containers) is asked again. @default 15000 */
  infoIntervalMs?: number;
}

/** Options of {@link createEngineHealth}. */
export interface EngineHealthOptions<STATE> {
  records: readonly EngineRecord<STATE>[];
  checks: EngineCheckOptions;
  /** Aborted when the pool closes: no check is scheduled after it, and what fails then is not reported. */
  closeSignal: AbortSignal;
  events: PoolEventEmitter<MultiEnginePoolEventMap>;
  /** An engine answered after it was unreachable or not yet checked. */
  onReachable(record: EngineRecord<STATE>): void;
  /** An engine stopped answering; `reason` is the error calls on it fail with from now on. */
  onUnreachable(record: EngineRecord<STATE>, reason: PoolError): void;
}

/** The health checks of a multi-engine pool's engines. See {@link createEngineHealth}. */
export interface EngineHealth<STATE> {
  /** Checks the engine now, or joins the check under way; resolves when it is done (it never rejects). */
  check(record: EngineRecord<STATE>): Promise<void>;
  /** What the engine's guarded driver asks of its health (see `guardEngineDriver`). */
  gate(record: EngineRecord<STATE>): EngineGate;
  /** Stops the scheduled checks. */
  stop(): void;
}

/**
 * Watches each engine with a ping every `intervalMs`, and at once when a call finds the engine gone. A check
 * that fails makes the engine unreachable (a refused connection at once, a timeout after two in a row); checks
 * then go on with backoff until one answers. A check that answers also asks the engine's `docker info` again
 * every `infoIntervalMs`.
 */
export function createEngineHealth<STATE>(options: EngineHealthOptions<STATE>): EngineHealth<STATE> {
  const { records, checks, closeSignal, events } = options;
  const intervalMs = checks.intervalMs ?? 5000;
  const checkTimeoutMs = checks.timeoutMs ?? 10_000;
  const backoffInitialMs = Math.max(1, checks.backoff?.initialMs ?? 500);
  const backoffMaxMs = Math.max(backoffInitialMs, checks.backoff?.maxMs ?? 30_000);
  const infoIntervalMs = checks.infoIntervalMs ?? 15_000;

  function check(record: EngineRecord<STATE>): Promise<void> {
    record.checking ??= (async () => {
      clearTimeout(record.timer);
      try {
        await record.raw.ping({
          signal: AbortSignal.any([AbortSignal.timeout(checkTimeoutMs), closeSignal]),
        });
        if (closeSignal.aborted) return;
        becameReachable(record);
        // Outside the check: whoever waits on it (a failed call) learns "reachable" without waiting for this.
        if (!record.report || Date.now() - record.report.at >= infoIntervalMs) void refreshInfo(record);
      } catch (error) {
        if (closeSignal.aborted) return;
        const timedOut = (error as { name?: unknown } | null)?.name === "TimeoutError";
        record.slowChecks = timedOut ? record.slowChecks + 1 : 0;
        if (!timedOut || record.slowChecks >= 2) becameUnreachable(record, error);
      } finally {
        record.checking = undefined;
        schedule(record);
      }
    })();
    return record.checking;
  }

  function schedule(record: EngineRecord<STATE>) {
    if (closeSignal.aborted) return;
    clearTimeout(record.timer);
    const delay =
      record.status === "unreachable"
        ? Math.min(backoffMaxMs, backoffInitialMs * 2 ** Math.min(record.failures - 1, 30))
        : record.slowChecks > 0
          ? backoffInitialMs
          : intervalMs;
    record.timer = setTimeout(() => void check(record), delay);
    record.timer.unref();
  }

  async function refreshInfo(record: EngineRecord<STATE>) {
    try {
      const info = await record.raw.info({
        signal: AbortSignal.any([AbortSignal.timeout(checkTimeoutMs), closeSignal]),
      });
      record.report = { info, at: Date.now(), heldThen: record.pool?.metrics().size ?? 0 };
    } catch (error) {
      if (!closeSignal.aborted) events.emit("error", { operation: "info", error, engineId: record.id });
    }
  }

  function becameReachable(record: EngineRecord<STATE>) {
    record.failures = 0;
    record.slowChecks = 0;
    if (record.status === "reachable") return;
    const wasUnreachable = record.status === "unreachable";
    record.status = "reachable";
    record.since = Date.now();
    record.error = undefined;
    if (record.down.signal.aborted) record.down = new AbortController();
    if (wasUnreachable) events.emit("engine", { engineId: record.id, status: "reachable" });
    options.onReachable(record);
  }

  function becameUnreachable(record: EngineRecord<STATE>, error: unknown) {
    record.failures++;
    record.error = error;
    if (record.status === "unreachable") return;
    record.status = "unreachable";
    record.since = Date.now();
    const reason = unreachableError(record);
    record.down.abort(reason);
    options.onUnreachable(record, reason);
    events.emit("engine", { engineId: record.id, status: "unreachable", error });
  }

  function gate(record: EngineRecord<STATE>): EngineGate {
    return {
      unreachable: () => (record.status === "unreachable" ? unreachableError(record) : undefined),
      suspect: () => {
        if (record.suspected) return;
        const suspected = check(record).finally(() => {
          if (record.suspected === suspected) record.suspected = undefined;
        });
        record.suspected = suspected;
      },
    };
  }

  function stop() {
    for (const record of records) clearTimeout(record.timer);
  }

  return { check, gate, stop };
}
