import { createServer, request } from "node:http";
import { createAgentRuntime, createMemoryThreadStore, createPai, createPaiHandler, defineAgent, defineTool, toNodeListener } from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { dockerSandbox, sandbox } from "@pai/sandbox";
import { z } from "zod";
let openPort: any;
const serve = defineTool({ id: "serve", description: "x", inputSchema: z.object({}), capabilities: { sandbox }, execute: async (ctx) => {
  const box = ctx.capabilities.sandbox;
  await box.writeFiles([{ path: "s.js", content: `require("http").createServer((q,r)=>{r.end("x".repeat(100))}).listen(8080,"127.0.0.1")` }]);
  await box.spawn({ command: "node", args: ["s.js"] });
  await new Promise((r) => setTimeout(r, 3000));
  return (await box.exposePort(8080)).url;
}});
const binding = dockerSandbox({ image: "pai/sandbox:latest", poolId: "tp3-scratch", pool: { min: 0, max: 1 } });
const origProvision = binding.provision.bind(binding);
(binding as any).provision = async (req: any) => { const r = await origProvision(req); openPort = r.openPort!.bind(r); return r; };
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
const med = (a: number[]) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)]!.toFixed(2);
const via: number[] = [], raw: number[] = [], client: number[] = [], direct: number[] = [];
const hostServer = createServer((q, r) => r.end("x".repeat(100)));
await new Promise<void>((r) => hostServer.listen(0, "127.0.0.1", r));
const hostPort = (hostServer.address() as any).port;
for (let i = 0; i < Number(process.env.N ?? 60); i++) {
  let t0 = performance.now();
  await new Promise<void>((resolve) => request({ host: "127.0.0.1", port, path: "/", agent: false, headers: { host: u.host, cookie } }, (res) => { res.resume(); res.on("end", () => resolve()); }).end());
  via.push(performance.now() - t0);
  t0 = performance.now();
  await new Promise<void>((resolve) => request({ host: "127.0.0.1", port: hostPort, path: "/", agent: false }, (res) => { res.resume(); res.on("end", () => resolve()); }).end());
  direct.push(performance.now() - t0);
  t0 = performance.now();
  const s = await openPort(8080, new AbortController().signal);
  await new Promise<void>((resolve) => { s.on("data", () => {}); s.on("end", resolve); s.write("GET / HTTP/1.0\r\n\r\n"); });
  raw.push(performance.now() - t0);
  s.destroy();
  t0 = performance.now();
  const s2 = await openPort(8080, new AbortController().signal);
  await new Promise<void>((resolve) => request({ path: "/", createConnection: () => s2, headers: { host: "localhost:8080" } }, (res) => { res.resume(); res.on("end", () => resolve()); }).end());
  client.push(performance.now() - t0);
  s2.destroy();
}
console.log("http client over openPort p50", med(client), "direct host server p50", med(direct));
hostServer.close();
console.log("via preview p50", med(via), "raw openPort p50", med(raw));
server.close(); await runtime.close();

const T = (globalThis as any).__T; for (const k of Object.keys(T ?? {})) console.log(k, med(T[k]));
