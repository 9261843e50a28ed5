import { FIRST_STREAM_ID } from "./agent-protocol.ts";
import type { ContainerAgentError } from "./container-agent-error.ts";
import type { Frame } from "./frame-codec.ts";

/** A request sent to the agent, waiting for the frames it answers with. */
export interface PendingRequest {
  /** A frame the agent sent for this request. Throwing a `SANDBOX_PROTOCOL` error ends the connection. */
  onFrame(frame: Frame): void;
  /** The connection ended with `error` while the request was in flight. */
  fail(error: ContainerAgentError): void;
}

/** The requests in flight on one agent connection, by request id. */
export interface RequestTable {
  /** Adds `request` under a fresh id (1 to `FIRST_STREAM_ID - 1`, none in use) and returns the id. */
  add(request: PendingRequest): number;
  get(id: number): PendingRequest | undefined;
  /** Forgets a request: a late answer to it is then ignored. */
  delete(id: number): void;
  /** Empties the table and returns what it held. */
  drain(): PendingRequest[];
}

/** An empty {@link RequestTable}; ids go round, skipping those still in use. */
export function createRequestTable(): RequestTable {
  const requests = new Map<number, PendingRequest>();
  let lastId = 0;
  return {
    add(request) {
      do lastId = lastId >= FIRST_STREAM_ID - 1 ? 1 : lastId + 1;
      while (requests.has(lastId));
      requests.set(lastId, request);
      return lastId;
    },
    get: (id) => requests.get(id),
    delete: (id) => void requests.delete(id),
    drain() {
      const pending = [...requests.values()];
      requests.clear();
      return pending;
    },
  };
}
