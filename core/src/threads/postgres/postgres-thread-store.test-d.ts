import { createAgentRuntime, createPai, defineAgent, type ThreadStore } from "@pai/core";
import { createPostgresThreadStore } from "@pai/core/postgres";
import pg from "pg";
import { expectTypeOf, test } from "vitest";

test("the README's Postgres snippet type-checks: the store is a ThreadStore a runtime takes", async () => {
  const pai = createPai({ agents: { chat: defineAgent({ tools: {} }) } });

  const store = await createPostgresThreadStore({ connectionString: process.env.DATABASE_URL! });
  const runtime = createAgentRuntime({ pai, store });

  expectTypeOf(store).toExtend<ThreadStore & AsyncDisposable>();
  await runtime.close();
});

test("takes either a connection string or a pg pool, not both and not neither", async () => {
  const pool = new pg.Pool();
  await createPostgresThreadStore({ pool, schema: "app_threads" });
  await createPostgresThreadStore({ connectionString: "postgresql:///pai", lockTimeoutMs: 100 });

  // @ts-expect-error both
  await createPostgresThreadStore({ connectionString: "postgresql:///pai", pool });
  // @ts-expect-error neither
  await createPostgresThreadStore({ schema: "pai" });
  // @ts-expect-error the pool's own timeouts apply to a pool the app passes
  await createPostgresThreadStore({ pool, lockTimeoutMs: 100 });
});
