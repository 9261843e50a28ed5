// Egress from real sandbox containers (network `none`) through PAI's proxy, against servers on the host's
// 127.0.0.1 only: curl and pip work when an allow entry names the exact host:port and fail with the reason when
// not; HTTPS goes through CONNECT to a TLS server whose CA the test hands to the sandbox; a direct connection
// cannot get around the proxy; limits and the lease's end close connections; every connection is an event on the
// binding and on the run.
import {
  type CapabilityStatusEvent,
  createAgentRuntime,
  createMemoryThreadStore,
  createPai,
  defineAgent,
  defineTool,
} from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import {
  type DockerSandboxBinding,
  type DockerSandboxOptions,
  dockerSandbox,
  type ProvisionedSandbox,
  resolveDefaultSandboxImage,
  type SandboxConnectionEvent,
  sandbox,
} from "@pai/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  dockerOptedOut,
  poolContainers,
  removePoolContainers,
  uniquePoolId,
  waitFor,
} from "./docker-helpers.ts";
import { type EgressServers, startEgressServers, WHEEL } from "./fixtures/egress-servers.ts";

let servers: EgressServers;
/** The image this checkout's Dockerfile builds (curl and pip in it), not whatever `latest` points at now. */
let image: string;
const bindings: Array<{ binding: DockerSandboxBinding; poolId: string }> = [];
const leases: ProvisionedSandbox[] = [];

function egressBinding(
  network: DockerSandboxOptions["network"],
  events: SandboxConnectionEvent[] = [],
): DockerSandboxBinding {
  const poolId = uniquePoolId("egress");
  const binding = dockerSandbox({
    image,
    poolId,
    pool: { min: 0, max: 3 },
    network,
    onConnection: (event) => events.push(event),
  });
  bindings.push({ binding, poolId });
  return binding;
}

/** Ends a lease now (so the pools stay small); the afterAll releases what a failing test left. */
async function release(resource: ProvisionedSandbox): Promise<void> {
  leases.splice(leases.indexOf(resource), 1);
  await resource.release();
}

async function provision(binding: DockerSandboxBinding, key: string): Promise<ProvisionedSandbox> {
  const resource = await binding.provision({
    leaseKey: `thread:${key}`,
    lifetime: "thread",
    signal: new AbortController().signal,
  });
  leases.push(resource);
  return resource;
}

describe.skipIf(dockerOptedOut)("sandbox egress through the proxy", () => {
  let allowed: DockerSandboxBinding;
  const events: SandboxConnectionEvent[] = [];

  beforeAll(async () => {
    image = process.env.PAI_SANDBOX_IMAGE ?? (await resolveDefaultSandboxImage());
    servers = await startEgressServers();
    allowed = egressBinding({ allow: [servers.web, servers.tls] }, events);
  });

  afterAll(async () => {
    try {
      for (const lease of leases) await lease.release().catch(() => undefined);
      for (const { binding, poolId } of bindings) {
        await binding.close();
        expect(await poolContainers(poolId)).toEqual([]);
      }
    } finally {
      for (const { poolId } of bindings) await removePoolContainers(poolId);
      await servers?.close();
    }
  });

  it("lets curl reach an allowed host:port on the host's loopback, and refuses another with the reason", async () => {
    const resource = await provision(allowed, "curl");
    const { facade, resourceId } = resource;
    const ok = await facade.runCommand({
      command: `curl -sS http://${servers.web}/hello`,
      timeoutMs: 20_000,
    });
    expect(ok).toMatchObject({ exitCode: 0, stdout: "hello from the host\n" });

    const otherPort = Number(servers.web.split(":")[1]) + 1;
    // Plain HTTP: the proxy's 403 carries the reason in its body (and status line).
    const refused = await facade.runCommand({
      command: `curl -sS --fail-with-body http://127.0.0.1:${otherPort}/`,
      timeoutMs: 20_000,
    });
    expect(refused.exitCode).toBe(22);
    expect(refused.stderr).toContain("403");
    expect(refused.stdout).toBe(
      `pai egress: 127.0.0.1:${otherPort} refused: a loopback address (only an allow entry naming exactly "127.0.0.1:${otherPort}" reaches it)\n`,
    );
    // HTTPS: the tunnel is refused; the reason is the status line of the CONNECT answer curl shows.
    const tunnel = await facade.runCommand({
      command: `curl -sSv https://127.0.0.1:${otherPort}/`,
      timeoutMs: 20_000,
    });
    expect(tunnel.exitCode).toBe(56);
    expect(tunnel.stderr).toContain(
      `< HTTP/1.1 403 pai egress: 127.0.0.1:${otherPort} refused: a loopback address`,
    );
    expect(tunnel.stderr).toContain("CONNECT tunnel failed, response 403");

    await waitFor(
      () => events.filter((event) => event.containerId === resourceId).length >= 3,
      "three events",
    );
    const mine = events.filter((event) => event.containerId === resourceId);
    expect(mine.find((event) => event.decision === "allowed")).toMatchObject({
      target: servers.web,
      address: "127.0.0.1",
      method: "GET",
      status: 200,
      bytesDown: expect.any(Number),
      channel: "socket", // an engine on this machine: relayed to the host's socket, not in frames
    });
    expect(mine.find((event) => event.decision === "allowed")?.bytesDown).toBeGreaterThan(20);
    expect(
      mine.filter((event) => event.decision === "refused").map((event) => [event.method, event.status]),
    ).toEqual([
      ["GET", 403],
      ["CONNECT", 403],
    ]);
    await release(resource);
  });

  it("pip installs a wheel from a local index the test serves, and fails with the reason when not allowed", async () => {
    const resource = await provision(allowed, "pip");
    const { facade } = resource;
    const install = await facade.runCommand({
      command: `pip install --no-cache-dir --target /workspace/site --index-url http://${servers.web}/simple ${WHEEL.name}`,
      timeoutMs: 120_000,
    });
    expect(install.stderr).not.toContain("ERROR");
    expect(install.exitCode).toBe(0);
    const imported = await facade.runCommand({
      command: "python3 -c 'import paihello; print(paihello.GREETING)'",
      env: { PYTHONPATH: "/workspace/site" },
    });
    expect(imported.stdout).toBe(`${WHEEL.greeting}\n`);

    await release(resource);

    const closed = await provision(egressBinding({ allow: ["pypi.org"] }), "pip-refused");
    const reason = `pai egress: ${servers.web} refused: a loopback address (only an allow entry naming exactly "${servers.web}" reaches it)`;
    // A plain-HTTP index: pip logs a 4xx answer only at debug level, -vv ("403 Client Error: <reason> for url").
    const refused = await closed.facade.runCommand({
      command: `pip install -vv --no-cache-dir --target /workspace/site --index-url http://${servers.web}/simple ${WHEEL.name}`,
      timeoutMs: 120_000,
    });
    expect(refused.exitCode).toBe(1);
    expect(refused.stdout).toContain(`403 Client Error: ${reason}`);
    expect(refused.stderr).toContain("No matching distribution found for paihello");
    // An HTTPS index goes through CONNECT: the refusal is in pip's own retry warnings on stderr.
    const tunnel = await closed.facade.runCommand({
      command: `pip install --retries 1 --no-cache-dir --target /workspace/site --index-url https://${servers.web}/simple ${WHEEL.name}`,
      timeoutMs: 120_000,
    });
    expect(tunnel.exitCode).toBe(1);
    expect(tunnel.stderr).toContain(`Tunnel connection failed: 403 ${reason}`);
    await release(closed);
  });

  it("tunnels HTTPS through CONNECT to a TLS server whose CA the sandbox is given", async () => {
    const resource = await provision(allowed, "tls");
    const { facade } = resource;
    await facade.writeFiles([{ path: "ca.pem", content: servers.caPem }]);
    const verified = await facade.runCommand({
      command: `curl -sS --cacert ca.pem https://${servers.tls}/`,
      timeoutMs: 20_000,
    });
    expect(verified).toMatchObject({ exitCode: 0, stdout: "hello over TLS\n" });
    // Without the CA the tunnel still opens, and TLS verification (end to end, not the proxy's) fails.
    const unverified = await facade.runCommand({
      command: `curl -sS https://${servers.tls}/`,
      timeoutMs: 20_000,
    });
    expect(unverified.exitCode).toBe(60);
    const python = await facade.runCommand({
      command: `python3 -c 'import urllib.request; print(urllib.request.urlopen("https://${servers.tls}/").read().decode(), end="")'`,
      env: { SSL_CERT_FILE: "/workspace/ca.pem" },
      timeoutMs: 20_000,
    });
    expect(python).toMatchObject({ exitCode: 0, stdout: "hello over TLS\n" });
    await release(resource);
  });

  it("has no way around the proxy: direct connections fail with network none", async () => {
    const resource = await provision(allowed, "direct");
    const { facade } = resource;
    const port = servers.web.split(":")[1];
    const bypass = await facade.runCommand({
      command: `curl -sS --noproxy '*' --max-time 5 http://127.0.0.1:${port}/hello`,
    });
    expect(bypass.exitCode).toBe(7); // the container's own loopback: nothing listens there
    const socketLevel = await facade.runCommand({
      command: "python3",
      args: [
        "-c",
        [
          "import socket",
          "for host in ('93.184.215.14', '10.0.0.1', '169.254.169.254'):",
          "    try:",
          "        socket.create_connection((host, 80), 3)",
          "        print(host, 'connected')",
          "    except OSError as error:",
          "        print(host, error.errno)",
        ].join("\n"),
      ],
    });
    expect(socketLevel.stdout).toBe("93.184.215.14 101\n10.0.0.1 101\n169.254.169.254 101\n"); // ENETUNREACH
    const interfaces = await facade.runCommand({ command: "ls /sys/class/net" });
    expect(interfaces.stdout.trim()).toBe("lo");
    await release(resource);
  });

  it("caps connections at once and bytes in all, and closes connections when the lease ends", async () => {
    const capped = egressBinding({ allow: [servers.web], maxConnections: 2, maxBytes: 2 * 1024 * 1024 });
    const resource = await provision(capped, "limits");
    const { facade } = resource;
    const url = `http://${servers.web}`;
    const three = await facade.runCommand({
      command: `for i in 1 2; do curl -sS -N --max-time 4 ${url}/hang >/dev/null & done; sleep 1; curl -sS --fail-with-body ${url}/hello; wait`,
      timeoutMs: 20_000,
    });
    expect(three.stdout).toContain("2 connections are open, the limit");

    const big = await facade.runCommand({ command: `curl -sS -o /dev/null ${url}/bytes/${4 * 1024 * 1024}` });
    expect(big.exitCode).not.toBe(0); // closed when the budget ran out
    const after = await facade.runCommand({ command: `curl -sS --fail-with-body ${url}/hello` });
    expect(after.stdout).toContain("bytes of traffic are spent");

    const open = await provision(egressBinding({ allow: [servers.web] }), "lease-end");
    await open.facade.spawn({ command: `curl -sS -N ${url}/hang` });
    await waitFor(
      () => servers.requests.some((request) => request.path === "/hang" && !request.closed),
      "a hanging request",
    );
    const hanging = servers.requests.filter((request) => request.path === "/hang" && !request.closed);
    await release(resource);
    await release(open);
    await waitFor(() => hanging.every((request) => request.closed), "the connection to close", 10_000);
  });

  it("reports each connection on the run that made it, as a capability status event", async () => {
    const fetchHello = defineTool({
      id: "fetchHello",
      description: "curl the host",
      inputSchema: z.object({ url: z.string() }),
      capabilities: { sandbox },
      execute: async (ctx) =>
        ctx.capabilities.sandbox.runCommand({ command: `curl -sS ${ctx.input.url}`, signal: ctx.signal }),
    });
    const pai = createPai({ agents: { fetcher: defineAgent({ tools: { fetchHello } }) } });
    await using runtime = createAgentRuntime({
      pai,
      store: createMemoryThreadStore(),
      model: createScriptedModel({
        steps: [
          { toolCalls: [{ toolName: "fetchHello", input: { url: `http://${servers.web}/hello` } }] },
          { text: "fetched" },
        ],
      }),
      capabilities: { sandbox: shared(allowed) },
    });
    const run = await runtime.run({ agentId: "fetcher", message: "go" });
    const statuses: CapabilityStatusEvent[] = [];
    for await (const chunk of run.stream as AsyncIterable<{ type: string; data?: unknown }>) {
      if (chunk.type === "data-pai-capability") statuses.push(chunk.data as CapabilityStatusEvent);
    }
    expect((await run.done).status).toBe("completed");
    expect(statuses.map((status) => status.status)).toEqual(["provisioning", "ready", "connection"]);
    expect(statuses[2]).toMatchObject({
      capability: "sandbox",
      status: "connection",
      connection: { target: servers.web, decision: "allowed", bytesDown: expect.any(Number) },
    });
  });
});

/** The binding as a runtime sees it, without handing the runtime its pool (closing the runtime keeps it). */
function shared(binding: DockerSandboxBinding) {
  return {
    kind: binding.kind,
    capability: binding.capability,
    lifetime: binding.lifetime,
    idleTtlMs: binding.idleTtlMs,
    start: () => binding.start?.() ?? Promise.resolve(),
    provision: (request: Parameters<DockerSandboxBinding["provision"]>[0]) => binding.provision(request),
    close: async () => {},
  };
}
