// Rewinding and forking threads on the real engine (issue 25): runtimes on one SQLite file and one checkpoint
// folder, dockerSandbox, the scripted model running each user message as a command. What a rewind or a fork
// restored is read back by the next command in the container, never by the checkpoint program's own word.
// Shown where the rest works: after a restart, across two runtimes on one store (the run lease), on a hibernated
// sandbox, and on a binding over two engines (the fork placed on the other engine, its files carried from the
// host's blob store).

import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AgentRuntime,
  type CapabilityBinding,
  createAgentRuntime,
  createFileCheckpointStore,
  createSqliteThreadStore,
  type RunResult,
} from "@pai/core";
import { type DockerSandboxBinding, dockerSandbox, type SandboxFacade } from "@pai/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  containersOn,
  engineSandboxImage,
  ensureTestEngines,
  removeFromEngines,
} from "../fixtures/test-engines.ts";
import {
  dockerOptedOut,
  poolContainers,
  removePoolContainers,
  sandboxImage,
  testDriver,
  uniquePoolId,
  waitFor,
} from "./docker-helpers.ts";
import { coderPai, commandModel, outputsOf } from "./fixtures/run-script.ts";

const identity = { userId: "u1" };
/** What turn 1 leaves in /workspace, as `show` prints it. */
const turnOneFiles = "src/a.txt one\nb.txt keep 640\n";
const writeTurnOne =
  "mkdir -p src && printf one > src/a.txt && printf keep > b.txt && chmod 640 b.txt && echo turn-1";
const changeInTurnTwo = "rm b.txt && printf changed > src/a.txt && printf new > c.txt && echo turn-2";
/** Prints the files turns 1 and 2 touch: content (and b.txt's mode), or that they are missing. */
const show =
  "for f in src/a.txt b.txt c.txt; do if [ -e $f ]; then printf '%s %s' $f \"$(cat $f)\"; " +
  "[ $f = b.txt ] && printf ' %s' $(stat -c %a $f); echo; fi; done";

let directory: string;
const poolIds: string[] = [];

/** A binding several runtimes of this file use in turn, each seeing it as its own (their close leaves it open). */
function shared(binding: DockerSandboxBinding): CapabilityBinding<SandboxFacade> {
  return {
    kind: binding.kind,
    capability: binding.capability,
    lifetime: binding.lifetime,
    idleTtlMs: binding.idleTtlMs,
    start: () => binding.start?.({ ownerId: "thread-rewind-test" }) ?? Promise.resolve(),
    provision: (request) => binding.provision(request),
    reattach: (lease, signal) => binding.reattach?.(lease, signal) ?? Promise.resolve(undefined),
    reapUnowned: (context) => binding.reapUnowned?.(context) ?? Promise.resolve(),
    close: async () => {},
  };
}

function sandboxBinding(name: string, pool: { min?: number; max?: number; hibernateAfterMs?: number }) {
  const poolId = uniquePoolId(name);
  poolIds.push(poolId);
  return dockerSandbox({ image: sandboxImage, poolId, pool: { min: 0, max: 4, ...pool } });
}

/** A runtime on the file's SQLite store and checkpoint folder (what a process restarted on them finds). */
function openRuntime(sandbox: CapabilityBinding<SandboxFacade>, ownerId?: string): AgentRuntime {
  return createAgentRuntime({
    pai: coderPai,
    store: createSqliteThreadStore({ path: join(directory, "threads.db") }),
    model: commandModel(),
    capabilities: { sandbox },
    checkpoints: {
      // Blobs are collected as soon as nothing references them: the tests take no checkpoint while collecting.
      store: createFileCheckpointStore({ directory: join(directory, "checkpoints"), collectAfterMs: 0 }),
    },
    ...(ownerId !== undefined ? { ownerId } : {}),
  });
}

/** One turn: the message runs as a command in the thread's sandbox; the run must complete. */
async function turn(runtime: AgentRuntime, message: string, threadId?: string): Promise<RunResult> {
  const run = await runtime.run({ agentId: "coder", identity, message, ...(threadId ? { threadId } : {}) });
  const result = await run.done;
  expect(result.status, JSON.stringify(result.error)).toBe("completed");
  return result;
}

/** The stdout of the turn's command (which must exit 0). */
function stdoutOf(result: RunResult): string {
  const output = outputsOf(result.messages).at(-1);
  expect(output, JSON.stringify(output)).toMatchObject({ exitCode: 0 });
  return String(output?.stdout);
}

/** Whether the checkpoint folder holds a blob of `content`. */
function blobStored(content: string): boolean {
  const digest = createHash("sha256").update(content).digest("hex");
  return existsSync(join(directory, "checkpoints", digest.slice(0, 2), digest));
}

const lastMessageId = (result: RunResult) => result.messages.at(-1)!.id;
const containerOf = (runtime: AgentRuntime, threadId: string) =>
  runtime.leases().find((lease) => lease.key === threadId)?.resourceId;

/** Two turns on a new thread: turn 1 writes files, turn 2 deletes and changes them. */
async function twoTurns(runtime: AgentRuntime) {
  const first = await turn(runtime, writeTurnOne);
  expect(stdoutOf(first)).toBe("turn-1\n");
  const second = await turn(runtime, changeInTurnTwo, first.threadId);
  expect(stdoutOf(second)).toBe("turn-2\n");
  return { first, second, threadId: first.threadId };
}

beforeAll(() => {
  directory = mkdtempSync(join(tmpdir(), "pai-thread-rewind-"));
});

afterAll(async () => {
  try {
    for (const poolId of poolIds) expect(await poolContainers(poolId)).toEqual([]);
  } finally {
    for (const poolId of poolIds) await removePoolContainers(poolId);
    rmSync(directory, { recursive: true, force: true });
  }
});

describe.skipIf(dockerOptedOut)("rewinding and forking threads with a docker sandbox", () => {
  let binding: DockerSandboxBinding;
  let runtime: AgentRuntime;

  beforeAll(async () => {
    binding = sandboxBinding("rewind", { min: 1, max: 6 });
    await binding.start?.({ ownerId: "thread-rewind-test" });
    runtime = openRuntime(shared(binding));
  }, 120_000);

  afterAll(async () => {
    await runtime?.close();
    await binding?.close();
  });

  it("rewinds to turn 1: the next command sees turn 1's files; later messages and checkpoints are gone", async () => {
    const { first, second, threadId } = await twoTurns(runtime);
    expect(await runtime.listCheckpoints(threadId)).toHaveLength(2);

    const rewound = await runtime.rewindThread({ threadId, toMessageId: lastMessageId(first), identity });
    expect(rewound.droppedMessageIds).toEqual(second.messages.slice(-2).map((message) => message.id));
    expect(rewound.restored).toMatchObject([{ capability: "sandbox", written: 2 }]);
    expect((await runtime.getThread(threadId))?.messages.map((message) => message.id)).toEqual(
      first.messages.map((message) => message.id),
    );
    expect((await runtime.listCheckpoints(threadId)).map((checkpoint) => checkpoint.messageId)).toEqual([
      lastMessageId(first),
    ]);

    const next = await turn(runtime, show, threadId);
    expect(stdoutOf(next)).toBe(turnOneFiles);

    // The blobs only the dropped checkpoint held are collected at the next maintenance pass; turn 1's stay.
    await runtime.sweep();
    expect(["changed", "new"].filter(blobStored)).toEqual([]);
    expect(["one", "keep"].filter(blobStored)).toEqual(["one", "keep"]);
  });

  it("forks at turn 1: the fork's own container has turn 1's files; the original's are untouched", async () => {
    const { first, threadId } = await twoTurns(runtime);
    const original = containerOf(runtime, threadId);

    const fork = await runtime.forkThread({ threadId, atMessageId: lastMessageId(first), identity });
    expect(fork.threadId).not.toBe(threadId);
    const forked = containerOf(runtime, fork.threadId);
    expect(forked).toBeDefined();
    expect(forked).not.toBe(original);
    expect(stdoutOf(await turn(runtime, show, fork.threadId))).toBe(turnOneFiles);

    // each diverges on its own
    await turn(runtime, "printf fork > src/a.txt", fork.threadId);
    expect(stdoutOf(await turn(runtime, show, threadId))).toBe("src/a.txt changed\nc.txt new\n");
    expect(stdoutOf(await turn(runtime, show, fork.threadId))).toBe("src/a.txt fork\nb.txt keep 640\n");
    expect(containerOf(runtime, threadId)).toBe(original);
  });

  it("refuses a rewind from another runtime on the store while a turn runs (THREAD_BUSY)", async () => {
    const { first, threadId } = await twoTurns(runtime);
    const other = openRuntime(shared(binding), `other-${process.pid}`);
    try {
      const running = await runtime.run({ agentId: "coder", identity, threadId, message: "sleep 60" });
      await expect(
        other.rewindThread({ threadId, toMessageId: lastMessageId(first), identity }),
      ).rejects.toMatchObject({ code: "THREAD_BUSY" });
      await runtime.stop({ threadId });
      expect((await running.done).status).toBe("cancelled");
      // once free, the other runtime rewinds it, and this one's next command sees the files of then
      await other.rewindThread({ threadId, toMessageId: lastMessageId(first), identity });
      expect(stdoutOf(await turn(runtime, show, threadId))).toBe(turnOneFiles);
    } finally {
      await other.close();
    }
  });

  it("after a restart: a new runtime on the same store and checkpoints restores into a new container", async () => {
    const { first, threadId } = await twoTurns(runtime);
    const before = containerOf(runtime, threadId) ?? "";
    await runtime.close();
    // the sandbox went with the runtime
    await expect(testDriver.inspect(before)).rejects.toThrow();

    runtime = openRuntime(shared(binding));
    const rewound = await runtime.rewindThread({ threadId, toMessageId: lastMessageId(first), identity });
    expect(rewound.restored).toMatchObject([{ capability: "sandbox", written: 2 }]);
    expect(containerOf(runtime, threadId)).not.toBe(before);
    expect(stdoutOf(await turn(runtime, show, threadId))).toBe(turnOneFiles);
  });
});

describe.skipIf(dockerOptedOut)("rewinding a thread whose sandbox is hibernated", () => {
  it("wakes the sandbox and restores it", async () => {
    const binding = sandboxBinding("rewind-hibernate", { hibernateAfterMs: 300 });
    const runtime = openRuntime(binding);
    try {
      const { first, threadId } = await twoTurns(runtime);
      const containerId = containerOf(runtime, threadId) ?? "";
      await waitFor(async () => binding.metrics()?.hibernated === 1, "hibernation");
      expect((await testDriver.inspect(containerId)).running).toBe(false);

      await runtime.rewindThread({ threadId, toMessageId: lastMessageId(first), identity });
      expect(containerOf(runtime, threadId)).toBe(containerId);
      expect(stdoutOf(await turn(runtime, show, threadId))).toBe(turnOneFiles);
    } finally {
      await runtime.close();
    }
  }, 120_000);
});

describe.skipIf(dockerOptedOut)("forking a thread on a binding over two engines", () => {
  it("places the fork on the other engine and carries the files there from the host's blob store", async () => {
    const engines = ensureTestEngines(2);
    const poolId = uniquePoolId("rewind-engines");
    // One container per engine: the fork cannot go where the original is.
    const binding = dockerSandbox({
      image: engineSandboxImage(),
      engines: engines.map((engine) => engine.engine),
      poolId,
      pool: { min: 0, max: 1, acquireTimeoutMs: 60_000 },
    });
    const runtime = openRuntime(binding);
    const engineOf = async (containerId: string | undefined) => {
      for (const engine of engines)
        if ((await containersOn(engine, poolId)).includes(containerId ?? "")) return engine.id;
      return undefined;
    };
    try {
      const { first, threadId } = await twoTurns(runtime);
      const fork = await runtime.forkThread({ threadId, atMessageId: lastMessageId(first), identity });
      const originalEngine = await engineOf(containerOf(runtime, threadId));
      const forkEngine = await engineOf(containerOf(runtime, fork.threadId));
      expect(originalEngine).toBeDefined();
      expect(forkEngine).toBeDefined();
      expect(forkEngine).not.toBe(originalEngine);
      expect(stdoutOf(await turn(runtime, show, fork.threadId))).toBe(turnOneFiles);
    } finally {
      await runtime.close();
      try {
        for (const engine of engines) expect(await containersOn(engine, poolId)).toEqual([]);
      } finally {
        await removeFromEngines(engines, poolId);
      }
    }
  }, 300_000);
});
