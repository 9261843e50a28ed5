// Sandbox lifetimes end to end: createAgentRuntime + the scripted model + dockerSandbox on the real engine.
import type { CapabilityBinding, CapabilityLifetime } from "@pai/core";
import { createAgentRuntime, createMemoryThreadStore, createPai, defineAgent, defineTool } from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { type DockerSandboxBinding, dockerSandbox, type SandboxFacade, sandbox } from "@pai/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  dockerOptedOut,
  poolContainers,
  removePoolContainers,
  sandboxImage,
  testDriver,
  uniquePoolId,
  waitFor,
} from "./docker-helpers.ts";
import { runScript } from "./fixtures/run-script.ts";

// The seed's tool, verbatim.
// The same with the run's signal passed explicitly (works whether or not the runtime binds facades to runs).
const runWithSignal = defineTool({
  id: "runWithSignal",
  description: "Run a command in this conversation's sandbox, stoppable.",
  inputSchema: z.object({ command: z.string() }),
  capabilities: { sandbox },
  execute: (ctx) => ctx.capabilities.sandbox.runCommand({ command: ctx.input.command, signal: ctx.signal }),
});

const note = defineTool({
  id: "note",
  description: "Remember a note",
  inputSchema: z.object({ text: z.string() }),
  execute: (ctx) => ({ saved: ctx.input.text }),
});

const pai = createPai({ agents: { coder: defineAgent({ tools: { runScript, runWithSignal, note } }) } });
const identity = { userId: "u1" };

/**
 * The shared binding, seen by each runtime as its own (closing a runtime leaves the shared pool open). One binding
 * has one owner, so the runtimes' owner ids are not passed on: its containers belong to this test file.
 */
function shared(
  binding: DockerSandboxBinding,
  overrides: { lifetime?: CapabilityLifetime; onProvision?: () => void; onBind?: () => void } = {},
): CapabilityBinding<SandboxFacade> {
  return {
    kind: binding.kind,
    capability: binding.capability,
    lifetime: overrides.lifetime ?? binding.lifetime,
    idleTtlMs: binding.idleTtlMs,
    start: () => binding.start?.({ ownerId: "sandbox-lifetimes-test" }) ?? Promise.resolve(),
    provision: async (request) => {
      overrides.onProvision?.();
      const resource = await binding.provision(request);
      return {
        ...resource,
        bind: (scope: { signal: AbortSignal }) => {
          overrides.onBind?.();
          return resource.bind(scope);
        },
      };
    },
    reattach: (lease, signal) => binding.reattach?.(lease, signal) ?? Promise.resolve(undefined),
    reapUnowned: (context) => binding.reapUnowned?.(context) ?? Promise.resolve(),
    close: async () => {},
  };
}

function calls(commands: string[], toolName = "runScript") {
  return { toolCalls: commands.map((command) => ({ toolName, input: { command } })) };
}

/** The outputs of the run's `runScript` calls, in call order. */
function outputsOf(
  messages: Array<{ parts: Array<Record<string, unknown>> }>,
): Array<Record<string, unknown>> {
  return messages
    .flatMap((message) => message.parts)
    .filter((part) => part.type === "tool-runScript" && part.state === "output-available")
    .map((part) => part.output as Record<string, unknown>);
}

async function running(containerId: string): Promise<boolean> {
  return testDriver.inspect(containerId).then(
    (info) => info.running,
    () => false,
  );
}

describe.skipIf(dockerOptedOut)("sandbox lifetimes through createAgentRuntime", () => {
  const poolId = uniquePoolId("lifetimes");
  let binding: DockerSandboxBinding;

  beforeAll(async () => {
    binding = dockerSandbox({ image: sandboxImage, poolId, pool: { min: 1, max: 6 } });
    await binding.start?.();
  });

  afterAll(async () => {
    try {
      await binding?.close();
      expect(await poolContainers(poolId)).toEqual([]);
    } finally {
      await removePoolContainers(poolId);
    }
  });

  it("runs the seed's runScript in a real container and the model receives its output", async () => {
    const model = createScriptedModel({ steps: [calls(["echo hello"]), { text: "it said hello" }] });
    await using runtime = createAgentRuntime({
      pai,
      store: createMemoryThreadStore(),
      model,
      capabilities: { sandbox: shared(binding) },
    });
    const run = await runtime.run({ agentId: "coder", identity, message: "say hello" });
    const result = await run.done;
    expect(result.status).toBe("completed");
    expect(outputsOf(result.messages)[0]).toMatchObject({ exitCode: 0, stdout: "hello\n", stderr: "" });
    const prompt = JSON.stringify(model.doStreamCalls[1]?.prompt);
    expect(prompt).toContain("hello\\n");
    expect(prompt).toContain('"terminationReason":"exit"');
  });

  it("gives ten parallel tool calls on one thread a single container", async () => {
    const before = binding.metrics()?.borrowed ?? 0;
    await using runtime = createAgentRuntime({
      pai,
      store: createMemoryThreadStore(),
      model: createScriptedModel({ steps: [calls(Array(10).fill("hostname")), { text: "done" }] }),
      capabilities: { sandbox: shared(binding) },
    });
    const result = await (await runtime.run({ agentId: "coder", identity, message: "go" })).done;
    const hostnames = outputsOf(result.messages).map((output) => output.stdout);
    expect(hostnames).toHaveLength(10);
    expect(new Set(hostnames).size).toBe(1);
    const leases = runtime.leases();
    expect(leases).toHaveLength(1);
    expect(leases[0]?.resourceId?.startsWith(String(hostnames[0]).trim())).toBe(true);
    expect((binding.metrics()?.borrowed ?? 0) - before).toBe(1);
  });

  it("acquires nothing for a run whose tools never touch the sandbox", async () => {
    let provisions = 0;
    const before = binding.metrics()?.borrowed ?? 0;
    await using runtime = createAgentRuntime({
      pai,
      store: createMemoryThreadStore(),
      model: createScriptedModel({
        steps: [{ toolCalls: [{ toolName: "note", input: { text: "x" } }] }, { text: "noted" }],
      }),
      capabilities: { sandbox: shared(binding, { onProvision: () => provisions++ }) },
    });
    const result = await (await runtime.run({ agentId: "coder", identity, message: "note x" })).done;
    expect(result.status).toBe("completed");
    expect(provisions).toBe(0);
    expect(runtime.leases()).toEqual([]);
    expect(binding.metrics()?.borrowed ?? 0).toBe(before);
  });

  it("keeps a thread's container (and its files) across runs and removes it on endThread", async () => {
    await using runtime = createAgentRuntime({
      pai,
      store: createMemoryThreadStore(),
      model: createScriptedModel({
        steps: [
          calls(["echo kept > state.txt"]),
          { text: "saved" },
          calls(["cat state.txt"]),
          { text: "read" },
          calls(["cat state.txt || echo gone"]),
          { text: "fresh" },
        ],
      }),
      capabilities: { sandbox: shared(binding) },
    });
    const first = await (await runtime.run({ agentId: "coder", identity, message: "save" })).done;
    const containerId = runtime.leases()[0]?.resourceId;
    expect(containerId).toBeDefined();
    expect(await running(containerId!)).toBe(true);

    const second = await (
      await runtime.run({ agentId: "coder", identity, threadId: first.threadId, message: "read" })
    ).done;
    expect(outputsOf(second.messages).at(-1)).toMatchObject({ stdout: "kept\n" });
    expect(runtime.leases()[0]?.resourceId).toBe(containerId);

    await runtime.endThread(first.threadId);
    expect(runtime.leases()).toEqual([]);
    expect(await running(containerId!)).toBe(false);
    expect(await poolContainers(poolId)).not.toContain(containerId);
    expect(await runtime.store.listLeases({ lifetime: "thread", key: first.threadId })).toEqual([]);

    const third = await (
      await runtime.run({ agentId: "coder", identity, threadId: first.threadId, message: "again" })
    ).done;
    expect(outputsOf(third.messages).at(-1)).toMatchObject({ stdout: "gone\n" });
    expect(runtime.leases()[0]?.resourceId).not.toBe(containerId);
  });

  it("releases a run-lifetime sandbox when the run ends", async () => {
    let containerId: string | undefined;
    await using runtime = createAgentRuntime({
      pai,
      store: createMemoryThreadStore(),
      model: createScriptedModel({
        steps: [
          calls(["hostname"]),
          () => {
            containerId = runtime.leases()[0]?.resourceId;
            return { text: "done" };
          },
        ],
      }),
      capabilities: { sandbox: shared(binding, { lifetime: "run" }) },
    });
    const result = await (await runtime.run({ agentId: "coder", identity, message: "go" })).done;
    expect(result.status).toBe("completed");
    expect(containerId).toBeDefined();
    expect(runtime.leases()).toEqual([]);
    expect(await running(containerId!)).toBe(false);
  });

  /** Starts `sleep 60` through `toolName`, presses Stop, and checks the process dies within a second. */
  async function stopDuringSleep(toolName: string, onBind?: () => void) {
    await using runtime = createAgentRuntime({
      pai,
      store: createMemoryThreadStore(),
      model: createScriptedModel({
        steps: [calls(["sleep 60"], toolName)],
        fallback: { text: "unreachable" },
      }),
      capabilities: { sandbox: shared(binding, onBind ? { onBind } : {}) },
    });
    const run = await runtime.run({ agentId: "coder", identity, message: "wait a minute" });
    let containerId: string | undefined;
    const sleeping = async () => {
      containerId ??= runtime.leases()[0]?.resourceId;
      if (!containerId) return false;
      const ps = await testDriver.exec(containerId, { cmd: ["ps", "-eo", "args="] });
      return ps.stdout.includes("sleep 60");
    };
    await waitFor(sleeping, "sleep 60 to start");
    run.cancel();
    let killed = true;
    await waitFor(async () => !(await sleeping()), "sleep 60 to die", 1000).catch(() => {
      killed = false;
    });
    const result = await run.done;
    expect(result.status).toBe("cancelled");
    expect(await running(containerId!)).toBe(true); // the thread's sandbox outlives the cancelled run
    if (!killed) await testDriver.exec(containerId!, { cmd: ["pkill", "-KILL", "-f", "sleep 60"] });
    return killed;
  }

  it("Stop during `sleep 60` (tool passes ctx.signal) ends the run cancelled and kills it within a second", async () => {
    expect(await stopDuringSleep("runWithSignal")).toBe(true);
  });

  it("Stop during the seed's `sleep 60` ends the run cancelled and kills it within a second", async () => {
    let bound = false;
    const killed = await stopDuringSleep("runScript", () => {
      bound = true;
    });
    // The seed's tool passes no signal: the runtime hands each run `resource.bind({ signal })`, which reaches it.
    expect(bound).toBe(true);
    expect(killed).toBe(true);
  });
});

/** A tool with a typo: `runComand` is no member of the sandbox facade (a tool written in JavaScript could do it). */
const misspelled = defineTool({
  id: "misspelled",
  description: "Calls a sandbox member that does not exist",
  inputSchema: z.object({ command: z.string() }),
  capabilities: { sandbox },
  execute: (ctx) => {
    const box = ctx.capabilities.sandbox as unknown as {
      runComand(options: { command: string }): Promise<unknown>;
    };
    return box.runComand({ command: ctx.input.command });
  },
});

describe.skipIf(dockerOptedOut)("sandbox teardown through createAgentRuntime", () => {
  it("leaves no container behind when a run is cancelled while its sandbox is being provisioned", async () => {
    const poolId = uniquePoolId("cancel");
    // min 0: nothing is warm, so provisioning has to create (and start) a container
    const binding = dockerSandbox({ image: sandboxImage, poolId, pool: { min: 0, max: 2 } });
    try {
      await binding.start?.();
      expect(await poolContainers(poolId)).toEqual([]);
      let provisioning: () => void = () => {};
      const started = new Promise<void>((resolve) => {
        provisioning = resolve;
      });
      await using runtime = createAgentRuntime({
        pai,
        store: createMemoryThreadStore(),
        model: createScriptedModel({ steps: [calls(["echo never"])], fallback: { text: "unreachable" } }),
        capabilities: { sandbox: shared(binding, { onProvision: () => provisioning() }) },
      });
      const run = await runtime.run({ agentId: "coder", identity, message: "go" });
      await started;
      await waitFor(() => (binding.metrics()?.creating ?? 0) > 0, "the container create to start");
      run.cancel();
      const result = await run.done;
      expect(result.status).toBe("cancelled");
      expect(runtime.leases()).toEqual([]);
      expect(await runtime.store.listLeases({ capability: "sandbox" })).toEqual([]);
      // the container whose create was under way is removed once it arrives
      await waitFor(() => binding.metrics()?.size === 0, "the pool to hold nothing");
      expect(await poolContainers(poolId)).toEqual([]);
      expect(binding.metrics()).toMatchObject({ borrowed: 0, createFailures: 0 });
    } finally {
      await binding.close();
      await removePoolContainers(poolId);
    }
  });

  it("creates no container for a member the sandbox does not have: box.runComand() is a TypeError at once", async () => {
    const poolId = uniquePoolId("typo");
    // min 0: nothing is warm, so any provisioning would have to create a container
    const binding = dockerSandbox({ image: sandboxImage, poolId, pool: { min: 0, max: 2 } });
    try {
      await binding.start?.();
      let provisions = 0;
      const errors: unknown[] = [];
      await using runtime = createAgentRuntime({
        pai: createPai({
          agents: {
            coder: defineAgent({
              tools: { misspelled },
              onRuntimeError: (error) => {
                errors.push(error);
              },
            }),
          },
        }),
        store: createMemoryThreadStore(),
        model: createScriptedModel({
          steps: [{ toolCalls: [{ toolName: "misspelled", input: { command: "echo hi" } }] }],
          fallback: { text: "done" },
        }),
        capabilities: { sandbox: shared(binding, { onProvision: () => provisions++ }) },
      });
      const result = await (await runtime.run({ agentId: "coder", identity, message: "go" })).done;
      expect(result.status).toBe("completed");
      const parts = result.messages.flatMap((message) => message.parts);
      expect(parts.find((part) => part.type === "tool-misspelled")).toMatchObject({ state: "output-error" });
      expect(errors).toHaveLength(1);
      expect(errors[0]).toBeInstanceOf(TypeError);
      expect(String(errors[0])).toContain("runComand");
      expect(provisions).toBe(0);
      expect(runtime.leases()).toEqual([]);
      expect(parts.filter((part) => part.type === "data-pai-capability")).toEqual([]);
      expect(binding.metrics()).toMatchObject({ size: 0, borrowed: 0, creating: 0 });
      expect(await poolContainers(poolId)).toEqual([]);
    } finally {
      await binding.close();
      await removePoolContainers(poolId);
    }
  });

  it("leaves no container behind after runtime.close()", async () => {
    const poolId = uniquePoolId("close");
    const binding = dockerSandbox({ image: sandboxImage, poolId, pool: { min: 1, max: 3 } });
    try {
      const runtime = createAgentRuntime({
        pai,
        store: createMemoryThreadStore(),
        model: createScriptedModel({ steps: [calls(["hostname"]), { text: "done" }] }),
        capabilities: { sandbox: binding },
      });
      await (await runtime.run({ agentId: "coder", identity, message: "go" })).done;
      expect(runtime.leases()).toHaveLength(1);
      expect((await poolContainers(poolId)).length).toBeGreaterThanOrEqual(1);
      await runtime.close();
      expect(await poolContainers(poolId)).toEqual([]);
    } finally {
      await binding.close();
      await removePoolContainers(poolId);
    }
  });
});
