export {
  createPostgresThreadStore,
  type PostgresThreadStoreConnectionOptions,
  type PostgresThreadStoreOptions,
  type PostgresThreadStorePoolOptions,
} from "./postgres-thread-store.ts";
