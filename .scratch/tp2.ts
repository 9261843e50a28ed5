import { createServer, request } from "node:http";
import { createAgentRuntime, createMemoryThreadStore, createPai, createPaiHandler, defineAgent, defineTool, toNodeListener } from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { dockerSandbox, sandbox } from "@pai/sandbox";
import { z } from "zod";
const serve = defineTool({ id: "serve", description: "x", inputSchema: z.object({}), capabilities: { sandbox }, execute: async (ctx) => {
  const box = ctx.capabilities.sandbox;
  await box.writeFiles([{ path: "s.js", content: `require("http").createServer((q,r)=>{const c=Buffer.alloc(1<<20,7);let l=100;r.writeHead(200,{"content-length":String(100<<20)});const p=()=>{while(l>0){l--;if(!r.write(c))return r.once("drain",p)}r.end()};p()}).listen(8080,"127.0.0.1")` }]);
  await box.spawn({ command: "node", args: ["s.js"] });
  await new Promise((r) => setTimeout(r, 1000));
  return (await box.exposePort(8080)).url;
}});
const binding = dockerSandbox({ image: "pai/sandbox:latest", poolId: "tp2-scratch", pool: { min: 0, max: 1 } });
const runtime = createAgentRuntime({ pai: createPai({ agents: { a: defineAgent({ identity: z.object({ u: z.string() }), tools: { serve } }) } }), store: createMemoryThreadStore(),
  model: createScriptedModel({ steps: [{ toolCalls: [{ toolName: "serve", input: {} }] }], fallback: { text: "ok" } }), capabilities: { sandbox: binding } });
const handler = createPaiHandler({ runtime, authenticate: () => ({ u: "a" }) });
const server = createServer(toNodeListener(handler));
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const port = (server.address() as any).port;
await fetch(`http://127.0.0.1:${port}/api/threads`);
const done = await (await runtime.run({ agentId: "a", identity: { u: "a" }, message: "x" })).done;
const url = JSON.stringify(done.messages).match(/http:\/\/[0-9a-f]+\.localhost:\d+\/\?pai_preview_token=[\w-]+/)![0];
const u = new URL(url);
const cookie = `pai_preview=${u.searchParams.get("pai_preview_token")}`;
for (let i = 0; i < 4; i++) {
  const t0 = performance.now();
  const n = await new Promise<number>((resolve) => request({ host: "127.0.0.1", port, path: "/", headers: { host: u.host, cookie } }, (res) => { if (res.statusCode !== 200) res.on("data", (c) => console.log(res.statusCode, String(c))); let n = 0; res.on("data", (c) => { n += c.length; }); res.on("end", () => resolve(n)); }).end());
  const ms = performance.now() - t0;
  console.log(`preview: ${(n / 1048576).toFixed(0)} MiB in ${ms.toFixed(0)} ms = ${(n / 1048576 / (ms / 1000)).toFixed(0)} MiB/s`);
}
server.close(); await runtime.close();
