import type { Pool, PoolClient } from "pg";

/** The channel every Postgres thread store notifies on; the payload is `<schema>:<run id>`. */
export const RUN_CHANNEL = "pai_run_chunks";

/** Wakes readers of runs when any process appends chunks to them or releases their thread. */
export interface PostgresRunWatcher {
  /** Calls `onChange` on each notification for `runId` until the returned function is called. */
  watch(runId: string, onChange: () => void): () => void;
  /** Ends the listening connection. */
  close(): void;
}

/**
 * Listens on {@link RUN_CHANNEL} over one connection of `pool`, held while anything is watched and given back
 * (closed: it is listening) once nothing is. Notifications are hints: when the connection fails they stop until
 * the next `watch`, and readers fall back to polling.
 */
export function createPostgresRunWatcher(options: { pool: Pool; schema: string }): PostgresRunWatcher {
  const { pool } = options;
  const prefix = `${options.schema}:`;
  const listeners = new Map<string, Set<() => void>>();
  let client: PoolClient | undefined;
  let connecting = false;
  let closed = false;

  const onNotification = (message: { channel: string; payload?: string | undefined }) => {
    if (message.channel !== RUN_CHANNEL || !message.payload?.startsWith(prefix)) return;
    for (const onChange of listeners.get(message.payload.slice(prefix.length)) ?? []) onChange();
  };

  /** Gives the connection back, closing it (a listening connection must not serve queries). */
  const drop = (error?: Error) => {
    const held = client;
    client = undefined;
    if (!held) return;
    held.off("notification", onNotification);
    held.release(error ?? true);
  };

  const listen = () => {
    if (client || connecting || closed) return;
    connecting = true;
    void (async () => {
      let connection: PoolClient | undefined;
      try {
        connection = await pool.connect();
        connection.on("notification", onNotification);
        connection.on("error", (error) => {
          if (client === connection) drop(error);
        });
        await connection.query(`LISTEN ${RUN_CHANNEL}`);
        client = connection;
        connection = undefined;
        if (listeners.size === 0 || closed) drop();
      } catch {
        // No notifications for now: readers poll, and the next watch tries again.
      } finally {
        connection?.off("notification", onNotification);
        connection?.release(true);
        connecting = false;
      }
    })();
  };

  return {
    watch(runId, onChange) {
      let set = listeners.get(runId);
      if (!set) {
        set = new Set();
        listeners.set(runId, set);
      }
      const own = () => onChange();
      set.add(own);
      listen();
      return () => {
        set.delete(own);
        if (set.size === 0 && listeners.get(runId) === set) listeners.delete(runId);
        if (listeners.size === 0) drop();
      };
    },
    close() {
      closed = true;
      listeners.clear();
      drop();
    },
  };
}
