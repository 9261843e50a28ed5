import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AgentRuntime,
  createAgentRuntime,
  createFileCheckpointStore,
  createMemoryThreadStore,
  createPai,
  defineAgent,
  defineTool,
} from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { type DockerSandboxBinding, dockerSandbox, sandbox } from "@pai/sandbox";
import { execa } from "execa";
import { z } from "zod";
import { benchImage, benchPoolId } from "./bench-containers.ts";
import { type BenchRow, ratioRow } from "./bench-row.ts";
import { summarize } from "./stats.ts";

const identity = { userId: "bench" };

/** A runtime whose agent runs each user message as one command and reports when the command was done. */
function createCommandRuntime(binding: DockerSandboxBinding, checkpointDirectory: string) {
  const command = defineTool({
    id: "command",
    description: "Run a command in this conversation's sandbox.",
    inputSchema: z.object({ command: z.string() }),
    outputSchema: z.object({ exitCode: z.number(), stderr: z.string(), doneAt: z.number() }),
    capabilities: { sandbox },
    execute: async (ctx) => {
      const result = await ctx.capabilities.sandbox.runCommand({ command: ctx.input.command });
      return { exitCode: result.exitCode, stderr: result.stderr, doneAt: performance.now() };
    },
  });
  const model = createScriptedModel({
    steps: [],
    fallback: (call) => {
      const last = call.prompt.at(-1);
      if (last?.role !== "user") return { text: "done" };
      const text = last.content.map((part) => (part.type === "text" ? part.text : "")).join("");
      return { toolCalls: [{ toolName: "command", input: { command: text } }] };
    },
  });
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { shell: defineAgent({ tools: { command }, maxSteps: 3 }) } }),
    store: createMemoryThreadStore(),
    model,
    capabilities: { sandbox: binding },
    checkpoints: { store: createFileCheckpointStore({ directory: checkpointDirectory }) },
  });

  /** One turn: the message runs as a command; resolves to when it was done and the thread's last message. */
  async function turn(message: string, threadId?: string) {
    const run = await runtime.run({ agentId: "shell", identity, message, ...(threadId ? { threadId } : {}) });
    const result = await run.done;
    const output = result.messages
      .flatMap((entry) => entry.parts as Array<Record<string, unknown>>)
      .findLast((part) => part.type === "tool-command" && part.state === "output-available")?.output as
      | { exitCode: number; stderr: string; doneAt: number }
      | undefined;
    if (result.status !== "completed" || output?.exitCode !== 0)
      throw new Error(`turn "${message.slice(0, 40)}": ${result.status} ${output?.stderr ?? ""}`);
    return { threadId: result.threadId, doneAt: output.doneAt, lastMessageId: result.messages.at(-1)!.id };
  }

  return { runtime, turn };
}

/** The container of a thread's sandbox. */
function containerOf(runtime: AgentRuntime, threadId: string): string {
  const id = runtime.leases().find((lease) => lease.key === threadId)?.resourceId;
  if (!id) throw new Error(`thread ${threadId} has no sandbox`);
  return id;
}

/**
 * Rewinding and forking a thread through the runtime, on a workspace of `files` files (`fileBytes` each) where one
 * file changed since the last turn, each timed to its first command: `rewindThread` then a turn's command in the
 * restored sandbox, and `forkThread` then a turn's command in the fork's new one. The baseline does the same by
 * hand: `docker cp` the workspace out of the thread's container, take a fresh sandbox from the same warm pool,
 * `docker cp` it in, run a command. Before each fork and each baseline the pool is warm again (untimed).
 */
export async function benchRewindAndFork(options: {
  rounds: number;
  files: number;
  fileBytes: number;
}): Promise<BenchRow[]> {
  const { files, fileBytes } = options;
  const binding = dockerSandbox({
    image: await benchImage(),
    poolId: benchPoolId("rewinds"),
    pool: { min: 1, max: 4 },
  });
  const signal = new AbortController().signal;
  const directory = await mkdtemp(join(tmpdir(), "pai-bench-rewinds-"));
  const copies = await mkdtemp(join(tmpdir(), "pai-bench-rewinds-cp-"));
  const { runtime, turn } = createCommandRuntime(binding, directory);
  const rewind: number[] = [];
  const fork: number[] = [];
  const copyIn: number[] = [];
  const copyOutAndIn: number[] = [];
  const changeOne = (index: number) =>
    `head -c ${fileBytes} /dev/urandom > /workspace/d${index % 10}/f${index}.bin`;
  const waitWarm = async () => {
    while ((binding.metrics()?.available ?? 0) < 1) await new Promise((resolve) => setTimeout(resolve, 10));
  };
  try {
    await binding.start?.();
    const { threadId } = await turn(
      `for d in $(seq 0 9); do mkdir -p /workspace/d$d; done; for i in $(seq 0 ${files - 1}); do head -c ${fileBytes} /dev/urandom > /workspace/d$((i % 10))/f$i.bin; done`,
    );
    for (let round = -1; round < options.rounds; round++) {
      const kept = await turn(changeOne(round + 1), threadId);
      await turn(changeOne(round + 500), threadId);

      let startedAt = performance.now();
      await runtime.rewindThread({ threadId, toMessageId: kept.lastMessageId, identity });
      const rewound = (await turn("true", threadId)).doneAt - startedAt;

      await waitWarm();
      startedAt = performance.now();
      const forked = await runtime.forkThread({ threadId, atMessageId: kept.lastMessageId, identity });
      const forkedAt = (await turn("true", forked.threadId)).doneAt - startedAt;
      await runtime.deleteThread(forked.threadId);

      await waitWarm();
      startedAt = performance.now();
      await execa("docker", ["cp", `${containerOf(runtime, threadId)}:/workspace`, join(copies, "out")]);
      const fresh = await binding.provision({ leaseKey: `thread:copy-${round}`, lifetime: "thread", signal });
      try {
        const provisioned = performance.now();
        await execa("docker", ["cp", `${join(copies, "out")}/.`, `${fresh.resourceId}:/workspace`]);
        const first = await fresh.bind({ signal }).runCommand({ command: "true" });
        if (first.exitCode !== 0)
          throw new Error(`the first command after docker cp exited ${first.exitCode}`);
        const done = performance.now();
        if (round >= 0) {
          rewind.push(rewound);
          fork.push(forkedAt);
          copyIn.push(done - provisioned);
          copyOutAndIn.push(done - startedAt);
        }
      } finally {
        await fresh.release();
        await rm(join(copies, "out"), { recursive: true, force: true });
      }
    }
  } finally {
    await runtime.close();
    await binding.close();
    await rm(directory, { recursive: true, force: true });
    await rm(copies, { recursive: true, force: true });
  }
  const workspace = `${files} files / ${((files * fileBytes) / 2 ** 20).toFixed(0)} MiB`;
  const rewinding = summarize(rewind);
  return [
    {
      ...ratioRow({
        name: `rewind to first command, workspace of ${workspace}, one file changed (vs docker cp in + command)`,
        subject: rewinding,
        baseline: summarize(copyIn),
        note: `${options.rounds} rounds; runtime.rewindThread (thread lease, the checkpoint record, the program restores the one changed file from the file store, messages stored) then a turn whose command runs in the restored sandbox; baseline: docker cp of a host copy of the workspace into a warm sandbox, then a command`,
      }),
      target: "p50 ≤ 1000 ms",
      met: rewinding.p50 <= 1000,
    },
    ratioRow({
      name: `fork to first command, workspace of ${workspace} (vs docker cp out, into a fresh sandbox, command)`,
      subject: summarize(fork),
      baseline: summarize(copyOutAndIn),
      note: "runtime.forkThread (a new thread, a sandbox from the warm pool, every file of the checkpoint written into it from the host's blobs) then a turn's command in it; baseline: docker cp of /workspace out of the thread's container to the host, a sandbox from the same warm pool, docker cp in, a command",
    }),
  ];
}
