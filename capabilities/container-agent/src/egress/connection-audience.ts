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
  /**
   * Adds `report` until the returned function is called (counted: it may be entered several times at once). A run's
   * view of a facade (`bindFacade`, `@pai/docker-binding`) enters its `report` while each call runs.
   */
  enter(report: ConnectionReporter): () => void;
  /** One reporter for a connection opening now: it tells every run in flight now. */
  snapshot(): ConnectionReporter;
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
  };
}
