// startServer on a real sandbox (the pai/sandbox image on the Docker engine), in a runtime that serves previews: a
// command that exits fails with its output, a server that listens becomes a preview and keeps running after the
// run, and a port already taken is refused without starting anything.
import {
  createAgentRuntime,
  createMemoryThreadStore,
  createPai,
  createPaiHandler,
  defineAgent,
} from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { dockerSandbox } from "@pai/sandbox";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { startServer } from "./start-server.ts";

const poolId = `test-sandbox-start-server-${process.pid}`;
const SERVE = { command: "python3 -m http.server 8000", port: 8000 };

describe("startServer in a real sandbox", () => {
  const binding = dockerSandbox({ poolId, pool: { min: 0, max: 1 } });
  const model = createScriptedModel({
    steps: [
      {
        toolCalls: [
          {
            toolName: "startServer",
            input: { command: "echo 'no module named app' >&2; exit 2", port: 8000 },
          },
        ],
      },
      { toolCalls: [{ toolName: "startServer", input: SERVE }] },
      {
        toolCalls: [
          { toolName: "startServer", input: { command: "python3 -m http.server 8000", port: 8000 } },
        ],
      },
      { text: "done" },
    ],
  });
  const runtime = createAgentRuntime({
    pai: createPai({
      agents: {
        coder: defineAgent({ identity: z.object({ userId: z.string() }), tools: { startServer } }),
      },
    }),
    store: createMemoryThreadStore(),
    model,
    capabilities: { sandbox: binding },
    previews: { baseUrl: "http://localhost:3000" },
  });

  afterAll(async () => {
    await runtime.close();
  });

  it("fails with the output of a command that exits, exposes one that listens, and refuses a taken port", async () => {
    const run = await runtime.run({ agentId: "coder", identity: { userId: "u1" }, message: "serve it" });
    const result = await run.done;
    expect(result.status).toBe("completed");
    const outputs = model.doStreamCalls[3]!.prompt.flatMap((message) =>
      message.role === "tool"
        ? message.content.flatMap((part) => (part.type === "tool-result" ? [part.output] : []))
        : [],
    );
    expect(outputs).toHaveLength(3);
    const [exited, served, taken] = outputs as Array<{ type: string; value: unknown }>;

    expect(exited).toEqual({
      type: "error-text",
      value: expect.stringContaining(
        "`echo 'no module named app' >&2; exit 2` exited (exit 2) before port 8000 answered. Its output:\nno module named app",
      ),
    });

    // the model is told the port and the expiry, never the URL with its token
    expect(served).toEqual({
      type: "json",
      value: {
        port: 8000,
        expiresAt: expect.any(String),
        command: SERVE.command,
        shown: expect.stringContaining("preview card"),
      },
    });
    expect(JSON.stringify(model.doStreamCalls[3]!.prompt)).not.toContain("pai_preview_token");
    // the thread (and the card) keep it
    const stored = (await runtime.store.loadMessages(result.threadId)).flatMap((message) => message.parts);
    const preview = (
      stored.find(
        (part) =>
          part.type === "tool-startServer" && (part as { state?: string }).state === "output-available",
      ) as unknown as { output: { url: string; port: number; expiresAt: string; command: string } }
    ).output;
    expect(preview.url).toMatch(/^http:\/\/[a-z0-9]+\.localhost:3000\/\?pai_preview_token=[\w-]+$/);
    expect(preview.port).toBe(8000);
    expect(preview.command).toBe(SERVE.command);
    expect(Date.parse(preview.expiresAt)).toBeGreaterThan(Date.now());
    expect(runtime.listPreviews(result.threadId).map((open) => open.url)).toEqual([preview.url]);

    expect(taken).toEqual({
      type: "error-text",
      value: expect.stringContaining("Port 8000 already answers in the sandbox"),
    });

    // after the run the server still runs: the preview serves its listing through the app's handler (the token
    // becomes a cookie on the first visit)
    const handler = createPaiHandler({ runtime, authenticate: () => ({ userId: "u1" }) });
    const first = await handler(new Request(preview.url));
    expect(first.status).toBe(302);
    const cookie = first.headers.get("set-cookie")!.split(";")[0]!;
    const page = await handler(
      new Request(new URL(first.headers.get("location")!, preview.url), { headers: { cookie } }),
    );
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("Directory listing for /");
  }, 180_000);
});
