// The README's tour, compiled as written (with `model` declared), so the README stays true.
import { createAgentRuntime, createPai, defineAgent, defineTool, type LanguageModel } from "@pai/core";
import { dockerSandbox, sandbox } from "@pai/sandbox";
import { defineCodeModeTool } from "@pai/sandbox/code-mode";
import { test } from "vitest";
import { z } from "zod";

declare const model: LanguageModel;

test("the README tour type-checks", async () => {
  const runScript = defineTool({
    id: "runScript",
    description: "Run a command in this conversation's sandbox.",
    inputSchema: z.object({ command: z.string() }),
    capabilities: { sandbox },
    execute: (ctx) => ctx.capabilities.sandbox.runCommand({ command: ctx.input.command }),
  });

  const deploy = defineTool({
    id: "deploy",
    description: "Deploy a service after approval",
    inputSchema: z.object({ service: z.string() }),
    execute: (ctx) =>
      ctx.entry.type === "resume"
        ? { deployed: ctx.input.service }
        : ctx.suspend({ question: `Deploy ${ctx.input.service}?` }),
  });

  const agent = defineAgent({
    identity: z.object({ userId: z.string() }),
    runtimeContext: async ({ identity }) => ({ userId: identity.userId, canDeploy: true }),
    tools: {
      runScript,
      deploy: { tool: deploy, enabled: ({ runtimeContext }) => runtimeContext.canDeploy },
    },
  });

  const refund = defineTool({
    id: "refund",
    description: "Refund an order once a manager approves",
    inputSchema: z.object({ orderId: z.string() }),
    execute: (ctx) =>
      ctx.entry.type === "resume"
        ? { refunded: ctx.input.orderId }
        : ctx.suspend({ question: `Refund ${ctx.input.orderId}?` }),
  });
  const support = defineAgent({ tools: { code: defineCodeModeTool({ tools: { runScript, refund } }) } });

  const pai = createPai({ agents: { coder: agent, support } });
  const runtime = createAgentRuntime({
    pai,
    model,
    capabilities: { sandbox: dockerSandbox({ pool: { min: 2, max: 8 } }) },
  });

  const run = await runtime.run({ agentId: "coder", identity: { userId: "u1" }, message: "run the tests" });
  for await (const _chunk of run.stream) {
    /* UI message stream chunks */
  }
  const { status } = await run.done;
  void status;
});

test("a runtime without the sandbox binding is a type error", () => {
  const runScript = defineTool({
    id: "runScript",
    description: "Run a command",
    inputSchema: z.object({ command: z.string() }),
    capabilities: { sandbox },
    execute: (ctx) => ctx.capabilities.sandbox.runCommand({ command: ctx.input.command }),
  });
  const pai = createPai({ agents: { coder: defineAgent({ tools: { runScript } }) } });
  // @ts-expect-error capabilities.sandbox is required: a registered tool needs it
  createAgentRuntime({ pai, model });
});

test("the README's several-engines binding type-checks", () => {
  const runScript = defineTool({
    id: "runScript",
    description: "Run a command",
    inputSchema: z.object({ command: z.string() }),
    capabilities: { sandbox },
    execute: (ctx) => ctx.capabilities.sandbox.runCommand({ command: ctx.input.command }),
  });
  const pai = createPai({ agents: { coder: defineAgent({ tools: { runScript } }) } });
  const [ca, cert, key, agent] = ["ca.pem", "cert.pem", "key.pem", "/run/ssh-agent.sock"];
  const runtime = createAgentRuntime({
    pai,
    model,
    capabilities: {
      sandbox: dockerSandbox({
        image: "pai/sandbox:latest", // must exist on every engine: nothing is pulled
        engines: [
          { id: "local", socketPath: "/var/run/docker.sock" },
          { id: "runner-2", host: "10.0.0.5", port: 2376, ca, cert, key, max: 20 },
          { id: "runner-3", host: "runner-3", protocol: "ssh", username: "pai", sshOptions: { agent } },
        ],
        pool: { min: 1, max: 8 }, // per engine: 1 warm container on each, at most 8 on each (runner-2: 20)
      }),
    },
  });
  void runtime;
});
