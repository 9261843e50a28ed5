// One runtime process of the load test: PAI's HTTP interface on a loopback port, threads in a shared Postgres schema,
// one Docker sandbox per conversation. Its one tool runs a shell command once a person approves it; before the
// command runs, it records the execution in the harness's own table (outside PAI's store), so a call PAI executed
// twice shows up as two rows.
// Prints `READY {"port":n}` once it serves; SIGTERM closes it (its containers removed) and exits 0.
// Usage: node load-runtime.ts <config JSON: LoadRuntimeConfig>
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import {
  createAgentRuntime,
  createPai,
  createPaiHandler,
  defineAgent,
  defineTool,
  toNodeListener,
} from "@pai/core";
import { createPostgresThreadStore } from "@pai/core/postgres";
import { createScriptedModel } from "@pai/core/testing";
import { sandbox } from "@pai/sandbox";
import pg from "pg";
import { z } from "zod";
import { loadSandboxBinding } from "./load-sandbox-binding.ts";

/** What the load test's driver hands each process. */
export interface LoadRuntimeConfig {
  ownerId: string;
  postgres: string;
  /** PAI's schema (the thread store). */
  schema: string;
  /** The harness's schema: `executions` (one row per execution of a call). */
  harnessSchema: string;
  poolId: string;
  image: string;
  /** The Docker engines (DOCKER_HOST values) this process's sandboxes go to. */
  engines: string[];
  /** Sandboxes this process runs at most. */
  maxSandboxes: number;
  ownerTtlMs: number;
}

const config = JSON.parse(process.argv[2]!) as LoadRuntimeConfig;
const harness = new pg.Pool({ connectionString: config.postgres, max: 4 });

const runCommand = defineTool({
  id: "runCommand",
  description: "Runs a shell command in this conversation's sandbox once a person approves it",
  inputSchema: z.object({ n: z.number() }),
  resumeSchema: z.object({ approved: z.boolean() }),
  capabilities: { sandbox },
  execute: async (ctx) => {
    if (ctx.entry.type !== "resume") return ctx.suspend({ question: `Run command ${ctx.input.n}?` });
    const { toolCallId, threadId } = ctx.thread;
    await harness.query(
      `INSERT INTO "${config.harnessSchema}".executions (tool_call_id, thread_id, owner_id) VALUES ($1, $2, $3)`,
      [toolCallId, threadId, config.ownerId],
    );
    const result = await ctx.capabilities.sandbox.runCommand({
      command: `echo ${toolCallId} >> calls.log && wc -l < calls.log`,
      signal: ctx.signal,
    });
    return { n: ctx.input.n, exitCode: result.exitCode, linesInLog: Number(result.stdout.trim()) };
  },
});

// "command <n>" → one approved call of runCommand (a call id unique across processes), then a short answer.
const model = createScriptedModel({
  steps: [],
  fallback: (call) => {
    const last = call.prompt.at(-1);
    if (last?.role === "tool") return { text: "done" };
    const n = Number(/command (\d+)/.exec(JSON.stringify(last?.content ?? ""))?.[1] ?? 0);
    return { toolCalls: [{ toolName: "runCommand", input: { n }, toolCallId: randomUUID() }] };
  },
});

const runtime = createAgentRuntime({
  pai: createPai({
    agents: {
      ops: defineAgent({
        tools: { runCommand },
        onRuntimeError: (error, info) =>
          console.error(`[${config.ownerId}] ${info.phase} ${info.threadId}:`, error),
      }),
    },
  }),
  store: await createPostgresThreadStore({
    connectionString: config.postgres,
    schema: config.schema,
    maxConnections: 16,
  }),
  model,
  capabilities: {
    sandbox: loadSandboxBinding({
      engines: config.engines,
      image: config.image,
      poolId: config.poolId,
      max: config.maxSandboxes,
    }),
  },
  ownerId: config.ownerId,
  heartbeatIntervalMs: 1000,
  ownerTtlMs: config.ownerTtlMs,
  reconcileIntervalMs: 2000,
  onBackgroundError: (error) => console.error(`[${config.ownerId}]`, error),
});
await runtime.startCapabilities();
const server = createServer(
  toNodeListener(
    createPaiHandler({
      runtime,
      authenticate: () => ({ userId: "load" }),
      onError: (error) => console.error(`[${config.ownerId}]`, error),
    }),
  ),
);
server.keepAliveTimeout = 60_000;
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
console.log(`READY ${JSON.stringify({ port: (server.address() as AddressInfo).port })}`);

process.once("SIGTERM", async () => {
  server.close();
  server.closeAllConnections();
  try {
    await runtime.close();
  } finally {
    await harness.end();
    process.exit(0);
  }
});
