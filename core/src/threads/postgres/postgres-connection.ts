import { type CustomTypesConfig, Client as PgClient, type Pool, types as pgTypes } from "pg";
import { storeClosedError } from "../parse-store-input.ts";
import type { StoredRow } from "../row-codecs.ts";
import { migratePostgresSchema, quoteIdentifier } from "./postgres-migrations.ts";
import { createPostgresRunWatcher } from "./postgres-run-watcher.ts";
import { toPostgresStoreError } from "./postgres-store-error.ts";

/** Runs the statement named `name` of a part of the store with `values`; resolves to the rows it returns. */
export type PostgresQuery<NAME extends string> = (name: NAME, values: unknown[]) => Promise<StoredRow[]>;

/** The Postgres store's connections (its pool and its listener), shared by the modules of the store's parts. */
export interface PostgresConnection {
  /**
   * What every notification of this store begins with, the run's id following: its schema and a colon (the
   * channel is shared by every schema of the database).
   */
  readonly noticePrefix: string;
  /** The database and schema this store keeps its threads in, as `host:port/database/schema` (no user). */
  readonly databaseKey: string;
  /**
   * The statements of one part of the store, `define` giving their SQL for the quoted schema. Each runs as a
   * prepared statement named after its key, so the keys of every part are distinct.
   */
  statements<NAME extends string>(define: (schema: string) => Record<NAME, string>): PostgresQuery<NAME>;
  /**
   * Runs `body` while the store is open, mapping failures to `PaiError`; rejects with `STORE_CLOSED` after
   * {@link PostgresConnection.close}, which waits for it.
   */
  use<RESULT>(action: string, body: () => Promise<RESULT>): Promise<RESULT>;
  /** Calls `onChange` on each notification about `runId` until the returned function is called. */
  watch(runId: string, onChange: () => void): () => void;
  /** Waits for the calls in flight, then stops listening and ends the pool if the store opened it (once). */
  close(): Promise<void>;
}

/** Where {@link openPostgresConnection} connects. */
export interface OpenPostgresConnectionOptions {
  pool: Pool;
  /** Whether the store opened `pool` (and ends it on close) or borrows the app's. */
  ownsPool: boolean;
  /** The schema's name, unquoted (a lowercase identifier). */
  schema: string;
  /** Aborts opening: the promise rejects with the signal's reason at once. */
  signal?: AbortSignal | undefined;
}

/** pg's type parsers, except that `json` stays text (parsed here, so SQL NULL and JSON `null` differ) and `bigint` is a number. */
const storedTypes: CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => {
    if (oid === pgTypes.builtins.JSON) return (text: string) => text;
    if (oid === pgTypes.builtins.INT8) return (text: string) => Number(text);
    return pgTypes.getTypeParser(oid, format);
  }) as CustomTypesConfig["getTypeParser"],
};

/**
 * Connects and brings the schema to the current version; on failure the store's own pool is ended and the
 * promise rejects with `PaiError` (`STORE_UNWRITABLE`, `STORE_CORRUPT`), or with the signal's reason.
 */
export async function openPostgresConnection(
  options: OpenPostgresConnectionOptions,
): Promise<PostgresConnection> {
  const { pool, ownsPool, schema, signal } = options;
  const { target, databaseKey } = describeTarget(pool, schema);
  try {
    await untilAborted(migratePostgresSchema({ pool, schema, target, signal }), signal);
  } catch (error) {
    // pool.end() closes idle connections at once and a busy one (a migration still running) when released.
    const ending = ownsPool ? pool.end().catch(() => {}) : undefined;
    if (signal?.aborted) throw signal.reason;
    await ending;
    throw toPostgresStoreError(error, target, "open");
  }

  const quoted = quoteIdentifier(schema);
  /** Statement names are per connection; the schema is in them, as stores of two schemas may share a pool. */
  const namePrefix = `pai:${schema}:`;
  const named = new Set<string>();
  const watcher = createPostgresRunWatcher({ pool, schema });
  let closed = false;
  let closing: Promise<void> | undefined;
  const inFlight = new Set<Promise<void>>();

  return {
    noticePrefix: `${schema}:`,
    databaseKey,

    statements(define) {
      const sql = define(quoted);
      for (const name of Object.keys(sql)) {
        // A name prepared twice on a connection would run the first one's SQL.
        if (named.has(name)) throw new Error(`Two statements of the Postgres thread store are named ${name}`);
        named.add(name);
      }
      return async (name, values) => {
        const result = await pool.query<StoredRow>({
          name: namePrefix + name,
          text: sql[name],
          values,
          types: storedTypes,
        });
        return result.rows;
      };
    },

    use(action, body) {
      if (closed) return Promise.reject(storeClosedError());
      const running = (async () => {
        try {
          return await body();
        } catch (error) {
          throw toPostgresStoreError(error, target, action);
        }
      })();
      const settled = running.then(
        () => {},
        () => {},
      );
      inFlight.add(settled);
      void settled.then(() => inFlight.delete(settled));
      return running;
    },

    watch(runId, onChange) {
      if (closed) throw storeClosedError();
      return watcher.watch(runId, onChange);
    },

    close() {
      closing ??= (async () => {
        closed = true;
        await Promise.all(inFlight);
        watcher.close();
        if (!ownsPool) return;
        try {
          await pool.end();
        } catch (error) {
          throw toPostgresStoreError(error, target, "close");
        }
      })();
      return closing;
    },
  };
}

/** `promise`, or a rejection with the signal's reason as soon as it aborts. */
function untilAborted<VALUE>(promise: Promise<VALUE>, signal: AbortSignal | undefined): Promise<VALUE> {
  if (!signal) return promise;
  return new Promise<VALUE>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * The server as pg resolves it, without the password: `user@host:port/database (schema "pai")` for messages, and
 * `host:port/database/pai` naming the threads' place whoever connects.
 */
function describeTarget(pool: Pool, schema: string): { target: string; databaseKey: string } {
  // A client that never connects: pg resolves the connection string and the PG* variables on construction.
  const { user, host, port, database } = new PgClient(pool.options);
  return {
    target: `${user}@${host}:${port}/${database} (schema "${schema}")`,
    databaseKey: `${host}:${port}/${database}/${schema}`,
  };
}
