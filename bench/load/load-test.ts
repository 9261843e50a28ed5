// The load test: several runtime processes on one Postgres schema and several Docker engines, conversations driven
// over HTTP on loopback, and one process killed -9 half-way. Every command is a tool call a person approves (an answer) that runs
// a shell command in the conversation's sandbox.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { PublicPendingAction, ThreadStore } from "@pai/core";
import { createPostgresThreadStore } from "@pai/core/postgres";
import { createDockerDriver, poolLabels } from "@pai/pool";
import pg from "pg";
import { readChunks } from "../../tests/fixtures/read-chunks.ts";
import type { LoadRuntimeConfig } from "./load-runtime.ts";
import { dockerEngine } from "./load-sandbox-binding.ts";

/** What {@link runLoadTest} does. */
export interface LoadTestOptions {
  /** The PostgreSQL server (a schema of the run's own is created and dropped). */
  postgres: string;
  /** The sandbox image. */
  image: string;
  /** Docker engines (DOCKER_HOST values): every process spans all of them (see load-sandbox-binding.ts). */
  engines: string[];
  /** Runtime processes. @default 3 */
  processes?: number;
  /** Conversations per process. @default 100 */
  conversationsPerProcess?: number;
  /** Commands per conversation. @default 5 */
  commands?: number;
  /** Conversations in flight at once, over all processes. @default 12 */
  concurrency?: number;
  /** Kill -9 one process once half the commands are done. @default true */
  kill?: boolean;
  /** The whole run stops (and fails) past this. @default 900000 (15 min) */
  deadlineMs?: number;
  /** Progress lines. */
  log?: (line: string) => void;
  /** Stops the run (everything it started is stopped and removed); it rejects with the reason. */
  signal?: AbortSignal;
}

/** What the load test counted. */
export interface LoadReport {
  processes: number;
  conversations: number;
  commands: number;
  /** Conversations that ran all their commands. */
  conversationsCompleted: number;
  commandsCompleted: number;
  /** Answers the client was told were accepted whose action the store does not hold as answered, or whose call never ended. */
  answersLost: number;
  /** Calls whose tool ran more than once (the harness's own record, written before each command). */
  toolCallsExecutedTwice: number;
  /** Containers of the run's pool on the engines once every process is gone (each engine's in `engines`). */
  containersLeft: number;
  /** Per engine: the conversations' sandboxes placed there, and the containers left there at the end. */
  engines: EngineReport[];
  /** Answers accepted whose call a killed process left `interrupted` (the command was asked for again). */
  callsInterrupted: number;
  /** Requests that failed (connection lost, THREAD_BUSY while a dead process's lease lapsed) and were retried. */
  retries: number;
  killedOwner: string | undefined;
  seconds: number;
  commandsPerSecond: number;
  /** Latency of one command (message + answer + the command's result), ms. */
  commandLatencyMs: { p50: number; p95: number; p99: number };
}

/** One engine in a {@link LoadReport}. */
export interface EngineReport {
  /** Its DOCKER_HOST value (the id sandbox leases record as `meta.engine`). */
  engine: string;
  /** The conversations' sandboxes placed on it (distinct containers their leases named). */
  sandboxes: number;
  /** Containers of the run's pool on it once every process is gone. */
  containersLeft: number;
}

interface Runtime {
  index: number;
  ownerId: string;
  api: string;
  child: ChildProcess;
  dead: boolean;
  exited: Promise<void>;
}

interface Chunk {
  type: string;
  toolCallId?: string;
  data?: unknown;
  output?: unknown;
}

const runtimeScript = join(import.meta.dirname, "load-runtime.ts");

/** Runs the load test and returns its counts; everything it started is stopped and removed. */
export async function runLoadTest(options: LoadTestOptions): Promise<LoadReport> {
  const processCount = options.processes ?? 3;
  const perProcess = options.conversationsPerProcess ?? 100;
  const commands = options.commands ?? 5;
  const concurrency = options.concurrency ?? 12;
  const deadline = Date.now() + (options.deadlineMs ?? 900_000);
  const log = options.log ?? (() => {});
  const signal = options.signal ?? new AbortController().signal;
  const runId = randomBytes(4).toString("hex");
  const schema = `pai_load_${runId}`;
  const harnessSchema = `pai_load_harness_${runId}`;
  const poolId = `pai-load-${runId}`;
  // Generous for a 2-core machine under load: a process that misses heartbeats this long counts as dead.
  const ownerTtlMs = 10_000;
  const admin = new pg.Pool({ connectionString: options.postgres, max: 2 });
  const runtimes: Runtime[] = [];
  let store: ThreadStore | undefined;
  const engines = options.engines.map((host) => ({ host, driver: createDockerDriver(dockerEngine(host)) }));
  /** The containers of each engine a sandbox lease named, by engine. */
  const placed = new Map(options.engines.map((host) => [host, new Set<string>()]));

  /** The run's containers on each engine, in the order of `engines`. */
  const poolContainers = () =>
    Promise.all(engines.map(({ driver }) => driver.list({ labels: { [poolLabels.pool]: poolId } })));

  try {
    await admin.query(`CREATE SCHEMA "${harnessSchema}"`);
    await admin.query(`CREATE TABLE "${harnessSchema}".executions (
      tool_call_id text NOT NULL, thread_id text NOT NULL, owner_id text NOT NULL, at timestamptz DEFAULT now())`);
    store = await createPostgresThreadStore({ connectionString: options.postgres, schema });

    log(`starting ${processCount} runtime processes (pool ${poolId}, engines ${options.engines.join(", ")})`);
    for (let index = 0; index < processCount; index++) {
      runtimes.push(
        await startRuntime(index, {
          ownerId: `load-${runId}-${index}`,
          postgres: options.postgres,
          schema,
          harnessSchema,
          poolId,
          image: options.image,
          engines: options.engines,
          maxSandboxes: Math.max(8, Math.ceil((2 * concurrency) / processCount)),
          ownerTtlMs,
        }),
      );
    }

    const total = processCount * perProcess;
    const latencies: number[] = [];
    const counts = {
      commandsCompleted: 0,
      conversationsCompleted: 0,
      answersLost: 0,
      callsInterrupted: 0,
      retries: 0,
    };
    let killedOwner: string | undefined;
    const live = () => runtimes.filter((runtime) => !runtime.dead);
    /** A conversation stays on its process (sticky sessions) until that process dies. */
    const runtimeFor = (conversation: number) => {
      const preferred = runtimes[conversation % processCount]!;
      if (!preferred.dead) return preferred;
      const survivors = live();
      return survivors[conversation % survivors.length]!;
    };

    const killOne = async () => {
      const victim = runtimes[1 % processCount]!;
      killedOwner = victim.ownerId;
      victim.dead = true;
      victim.child.kill("SIGKILL");
      await victim.exited;
      log(`killed -9 ${victim.ownerId} after ${counts.commandsCompleted} commands`);
    };

    const started = Date.now();
    let next = 0;
    const worker = async () => {
      while (next < total) {
        const conversation = next++;
        await runConversation(conversation);
      }
    };

    async function runConversation(conversation: number): Promise<void> {
      const threadId = `load-${runId}-c${conversation}`;
      const accepted: Array<{ actionId: string; toolCallId: string }> = [];
      for (let n = 1; n <= commands; n++) {
        const began = Date.now();
        await runCommandTurn(conversation, threadId, n, accepted);
        latencies.push(Date.now() - began);
        counts.commandsCompleted += 1;
        await notePlacement(threadId);
        if (options.kill !== false && !killedOwner && counts.commandsCompleted >= (total * commands) / 2)
          await killOne();
      }
      counts.answersLost += await lostAnswers(threadId, accepted);
      const completed = ++counts.conversationsCompleted;
      // The conversation is over: its sandbox goes (the thread with it, once checked).
      await withRetries(conversation, (runtime) =>
        request(runtime, `/threads/${threadId}`, { method: "DELETE", signal }).then(
          () => undefined,
          (error: unknown) => {
            // Deleted by an attempt whose answer was lost with its process.
            if (!(error instanceof HttpError && error.status === 404)) throw error;
          },
        ),
      );
      // Each milestone once (`completed`, not the shared count, which other conversations move meanwhile).
      if (completed % 25 === 0)
        log(`${completed}/${total} conversations, ${counts.commandsCompleted} commands`);
    }

    /** One command: the message, the approval, the command's result; after a failure, picks up from the stored thread. */
    async function runCommandTurn(
      conversation: number,
      threadId: string,
      n: number,
      accepted: Array<{ actionId: string; toolCallId: string }>,
    ): Promise<void> {
      let action: PublicPendingAction | undefined;
      let recovering = false;
      for (;;) {
        signal.throwIfAborted();
        if (Date.now() > deadline)
          throw new Error(`the load test ran past its deadline (command ${n} of ${threadId})`);
        const runtime = runtimeFor(conversation);
        try {
          if (recovering) {
            const state = await threadState(runtime, threadId, n);
            recovering = false;
            if (state.kind === "done") return;
            if (state.kind === "busy") throw new Retry("a run is in progress");
            if (state.kind === "interrupted") counts.callsInterrupted += 1;
            action = state.kind === "pending" ? state.action : undefined;
          }
          if (!action) {
            const chunks = (await readChunks(
              await request(runtime, "/chat", {
                method: "POST",
                signal,
                body: {
                  id: threadId,
                  messages: [
                    {
                      id: `${threadId}-m${n}-${Date.now()}`,
                      role: "user",
                      parts: [{ type: "text", text: `command ${n}` }],
                    },
                  ],
                },
              }),
            )) as Chunk[];
            action = pendingActionIn(chunks);
            if (!action) throw new Retry("the run ended without asking for approval");
          }
          const response = await request(runtime, `/threads/${threadId}/actions/${action.actionId}`, {
            method: "POST",
            signal,
            stream: true,
            body: {
              toolCallId: action.toolCallId,
              toolId: action.toolId,
              inputHash: action.inputHash,
              answer: { type: "resume", resume: { approved: true } },
            },
          });
          if (response.headers.get("content-type")?.includes("application/json")) {
            // Settled before (an earlier attempt's answer got through): the stored thread says how it went.
            await response.body?.cancel();
            throw new Retry("already settled");
          }
          accepted.push({ actionId: action.actionId, toolCallId: action.toolCallId });
          const chunks = (await readChunks(response)) as Chunk[];
          if (
            chunks.some(
              (chunk) => chunk.type === "tool-output-available" && chunk.toolCallId === action!.toolCallId,
            )
          )
            return;
          throw new Retry("the continuation ended without the command's result");
        } catch (error) {
          if (!(error instanceof Retry) && !isConnectionError(error)) throw error;
          counts.retries += 1;
          recovering = true;
          action = undefined;
          await sleep(150);
        }
      }
    }

    /** Where command `n` of a thread stands, as stored. */
    async function threadState(
      runtime: Runtime,
      threadId: string,
      n: number,
    ): Promise<
      | { kind: "done" | "busy" | "interrupted" | "not-asked" }
      | { kind: "pending"; action: PublicPendingAction }
    > {
      const snapshot = (await (
        await request(runtime, `/threads/${threadId}`, { method: "GET", signal }).catch((error: unknown) => {
          if (error instanceof HttpError && error.status === 404) return undefined;
          throw error;
        })
      )?.json()) as
        | {
            activeRunId: string | null;
            pendingActions: PublicPendingAction[];
            messages: Array<{ parts: Array<{ type: string; state?: string; input?: { n?: number } }> }>;
          }
        | undefined;
      if (!snapshot) return { kind: "not-asked" };
      if (snapshot.activeRunId !== null) return { kind: "busy" };
      const pending = snapshot.pendingActions.find(
        (candidate) => (candidate.input as { n?: number })?.n === n,
      );
      if (pending) return { kind: "pending", action: pending };
      const call = snapshot.messages
        .flatMap((message) => message.parts)
        .filter((part) => part.type === "tool-runCommand" && part.input?.n === n)
        .at(-1);
      if (call?.state === "output-available") return { kind: "done" };
      if (call?.state === "output-error") return { kind: "interrupted" };
      return { kind: "not-asked" };
    }

    /** Notes the engine of the conversation's sandbox, as its lease records it. */
    async function notePlacement(threadId: string): Promise<void> {
      for (const lease of await store!.listLeases({ lifetime: "thread", key: threadId })) {
        const engine = lease.meta.engine;
        if (typeof engine !== "string" || !placed.has(engine))
          throw new Error(`the sandbox lease of ${threadId} names no engine of the run: ${String(engine)}`);
        placed.get(engine)!.add(lease.resourceId);
      }
    }

    /** Accepted answers of a finished conversation the store does not hold as answered, or whose call never ended. */
    async function lostAnswers(
      threadId: string,
      accepted: Array<{ actionId: string; toolCallId: string }>,
    ): Promise<number> {
      // The last run stores the thread after its stream ends: read it once the run has given the thread up.
      await until(
        async () => (await store!.getThreadLease(threadId)) === undefined,
        deadline,
        "the run to end",
        signal,
      );
      const messages = await store!.loadMessages(threadId);
      const parts = messages.flatMap((message) => message.parts) as Array<{
        toolCallId?: string;
        state?: string;
      }>;
      let lost = 0;
      for (const { actionId, toolCallId } of accepted) {
        const stored = await store!.getPendingAction(actionId);
        const ended = parts.some(
          (part) =>
            part.toolCallId === toolCallId &&
            (part.state === "output-available" || part.state === "output-error"),
        );
        const answered =
          stored?.status === "resumed" && (stored.answer as { type?: string } | undefined)?.type === "resume";
        if (!answered || !ended) lost += 1;
      }
      return lost;
    }

    async function withRetries(
      conversation: number,
      body: (runtime: Runtime) => Promise<void>,
    ): Promise<void> {
      for (;;) {
        try {
          return await body(runtimeFor(conversation));
        } catch (error) {
          if (!isConnectionError(error) && !(error instanceof Retry)) throw error;
          signal.throwIfAborted();
          if (Date.now() > deadline) throw error;
          counts.retries += 1;
          await sleep(150);
        }
      }
    }

    await Promise.all(Array.from({ length: Math.min(concurrency, total) }, () => worker()));
    const seconds = (Date.now() - started) / 1000;

    // The survivors free the killed process's containers within owner TTL + reconcile interval; then they close.
    if (killedOwner) {
      const owner = killedOwner;
      await until(
        async () =>
          (await poolContainers()).flat().every((container) => container.labels[poolLabels.owner] !== owner),
        deadline,
        "the killed process's containers to be freed",
        signal,
      );
    }
    for (const runtime of live()) runtime.child.kill("SIGTERM");
    await Promise.all(runtimes.map((runtime) => runtime.exited));
    const left = await poolContainers();
    const [{ twice }] = (
      await admin.query(
        `SELECT count(*)::integer AS twice FROM (SELECT tool_call_id FROM "${harnessSchema}".executions
           GROUP BY tool_call_id HAVING count(*) > 1) AS repeated`,
      )
    ).rows as [{ twice: number }];
    latencies.sort((a, b) => a - b);
    const at = (q: number) =>
      latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
    return {
      processes: processCount,
      conversations: total,
      commands: total * commands,
      ...counts,
      toolCallsExecutedTwice: twice,
      containersLeft: left.flat().length,
      engines: engines.map(({ host }, index) => ({
        engine: host,
        sandboxes: placed.get(host)!.size,
        containersLeft: left[index]!.length,
      })),
      killedOwner,
      seconds,
      commandsPerSecond: counts.commandsCompleted / seconds,
      commandLatencyMs: { p50: at(0.5), p95: at(0.95), p99: at(0.99) },
    };
  } finally {
    for (const runtime of runtimes) if (runtime.child.exitCode === null) runtime.child.kill("SIGKILL");
    await Promise.all(runtimes.map((runtime) => runtime.exited));
    // Whatever is left after counting goes, so the shared engine stays clean.
    await Promise.all(
      engines.map(async ({ driver }) => {
        const containers = await driver.list({ labels: { [poolLabels.pool]: poolId } }).catch(() => []);
        await Promise.all(containers.map((container) => driver.remove(container.id).catch(() => undefined)));
      }),
    );
    await store?.close().catch(() => undefined);
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await admin.query(`DROP SCHEMA IF EXISTS "${harnessSchema}" CASCADE`).catch(() => undefined);
    await admin.end();
  }
}

/** Starts one runtime process and waits until it serves. */
async function startRuntime(index: number, config: LoadRuntimeConfig): Promise<Runtime> {
  const child = spawn(process.execPath, [runtimeScript, JSON.stringify(config)], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (text: string) => {
    stderr = (stderr + text).slice(-4000);
    process.stderr.write(text);
  });
  const port = await new Promise<number>((resolve, reject) => {
    let stdout = "";
    child.stdout!.setEncoding("utf8").on("data", (text: string) => {
      stdout += text;
      const ready = /READY (\{.*\})/.exec(stdout);
      if (ready) resolve((JSON.parse(ready[1]!) as { port: number }).port);
    });
    child.once("exit", (code) =>
      reject(new Error(`runtime ${index} exited (${code}) before serving: ${stderr}`)),
    );
  });
  return { index, ownerId: config.ownerId, api: `http://127.0.0.1:${port}/api`, child, dead: false, exited };
}

/** A failure the turn recovers from by reading the stored thread. */
class Retry extends Error {}

class HttpError extends Error {
  readonly status: number;
  constructor(status: number, body: string) {
    super(`HTTP ${status}: ${body}`);
    this.status = status;
  }
}

/** One request to a runtime; non-2xx is an {@link HttpError} (a 409 THREAD_BUSY is a {@link Retry}). */
async function request(
  runtime: Runtime,
  path: string,
  init: { method: string; body?: unknown; stream?: boolean; signal: AbortSignal },
): Promise<Response> {
  const response = await fetch(`${runtime.api}${path}`, {
    method: init.method,
    headers: {
      ...(init.body !== undefined ? { "content-type": "application/json" } : {}),
      ...(init.stream ? { accept: "text/event-stream" } : {}),
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    signal: AbortSignal.any([init.signal, AbortSignal.timeout(120_000)]),
  });
  if (response.ok) return response;
  const text = await response.text();
  if (response.status === 409 && text.includes("THREAD_BUSY")) throw new Retry(text);
  throw new HttpError(response.status, text);
}

function pendingActionIn(chunks: Chunk[]): PublicPendingAction | undefined {
  const action = chunks.findLast((chunk) => chunk.type === "data-pai-action")?.data as
    | (PublicPendingAction & { status: string })
    | undefined;
  return action?.status === "pending" ? action : undefined;
}

/** A request that died with its process or its connection (refused, reset, cut mid-stream). */
function isConnectionError(error: unknown): boolean {
  const cause = (error as { cause?: { code?: string } } | null)?.cause;
  return (
    error instanceof TypeError ||
    ["ECONNREFUSED", "ECONNRESET", "UND_ERR_SOCKET", "EPIPE"].includes(cause?.code ?? "") ||
    (error instanceof Error && /terminated|socket|aborted/i.test(error.message))
  );
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function until(
  condition: () => Promise<boolean>,
  deadline: number,
  what: string,
  signal?: AbortSignal,
): Promise<void> {
  while (!(await condition())) {
    signal?.throwIfAborted();
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}
