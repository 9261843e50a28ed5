import type { CapabilityConnectionEvent } from "@pai/core";

/** Where a connection event goes: a run's `report`. */
export type ConnectionReporter = (event: CapabilityConnectionEvent) => void;

/**
 * Who a container's connections are reported to: the runs with an operation in flight on it when the connection
 * opened (a `runCommand` that runs `pip install`, a `goto` that loads a page), each told once when the connection
 * ends. Connections a background process makes after every run's operation ended reach only the binding's own
 * listener.
 */
export interface ConnectionAudience {
  /** Adds `report` until the returned function is called (counted: it may be entered several times at once). */
  enter(report: ConnectionReporter): () => void;
  /** One reporter for a connection opening now: it tells every run in flight now. */
  snapshot(): ConnectionReporter;
  /**
   * `facade` with every method entering `report` while it runs: until its promise settles, or, for the methods
   * `holdUntil` names, until the promise `holdUntil` picks from the result settles (a spawned process's end).
   */
  during<FACADE extends object>(
    facade: FACADE,
    report: ConnectionReporter,
    holdUntil?: (method: string, result: unknown) => Promise<unknown> | undefined,
  ): FACADE;
}

/** A fresh {@link ConnectionAudience}, one per container. */
export function createConnectionAudience(): ConnectionAudience {
  const present = new Map<ConnectionReporter, number>();

  function enter(report: ConnectionReporter): () => void {
    present.set(report, (present.get(report) ?? 0) + 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const count = (present.get(report) ?? 1) - 1;
      if (count <= 0) present.delete(report);
      else present.set(report, count);
    };
  }

  return {
    enter,
    snapshot() {
      const reporters = [...present.keys()];
      return (event) => {
        for (const report of reporters) {
          try {
            report(event);
          } catch {
            // a run's stream that is gone must not break the proxy
          }
        }
      };
    },
    during<FACADE extends object>(
      facade: FACADE,
      report: ConnectionReporter,
      holdUntil?: (method: string, result: unknown) => Promise<unknown> | undefined,
    ): FACADE {
      const wrapped: Record<string, unknown> = {};
      for (const [name, member] of Object.entries(facade)) {
        if (typeof member !== "function") {
          wrapped[name] = member;
          continue;
        }
        wrapped[name] = (...args: unknown[]) => {
          const leave = enter(report);
          let result: unknown;
          try {
            result = member.apply(facade, args);
          } catch (error) {
            leave();
            throw error;
          }
          Promise.resolve(result).then((value) => {
            const held = holdUntil?.(name, value);
            if (held) held.then(leave, leave);
            else leave();
          }, leave);
          return result;
        };
      }
      return wrapped as FACADE;
    },
  };
}
