// How egress connections reach the host from real sandbox containers (network `none`), against servers on the
// host's 127.0.0.1 only: with an engine on this machine the agent relays them to the unix socket of this process's egress relay
// that the container sees in a read-only directory, where a connection without the container's token is closed and
// reported for no sandbox; `channel: "tunnel"` keeps them in frames over the agent's exec stream with nothing
// mounted; ending the lease closes relayed connections. When the relay dies, a new one admits the tokens of the
// running sandboxes, which tunnel only while none listens.
import { mkdir, readFile, rmdir, unlink } from "node:fs/promises";
import { join } from "node:path";
import { egressSocketHostDirectory, prepareEgressChannel } from "@pai/container-agent";
import {
  type DockerSandboxBinding,
  type DockerSandboxOptions,
  dockerSandbox,
  type ProvisionedSandbox,
  resolveDefaultSandboxImage,
  type SandboxConnectionEvent,
} from "@pai/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  dockerOptedOut,
  poolContainers,
  removePoolContainers,
  testDriver,
  uniquePoolId,
  waitFor,
} from "./docker-helpers.ts";
import { type EgressServers, startEgressServers } from "./fixtures/egress-servers.ts";
import { expectTunnelledHello } from "./fixtures/expect-tunnelled.ts";

let servers: EgressServers;
let image: string;
const bindings: Array<{ binding: DockerSandboxBinding; poolId: string }> = [];
const leases: ProvisionedSandbox[] = [];
const events: SandboxConnectionEvent[] = [];

function egressBinding(network: DockerSandboxOptions["network"]): DockerSandboxBinding {
  const poolId = uniquePoolId("egress-channel");
  const binding = dockerSandbox({
    image,
    poolId,
    pool: { min: 0, max: 2 },
    network,
    onConnection: (event) => events.push(event),
  });
  bindings.push({ binding, poolId });
  return binding;
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

async function release(resource: ProvisionedSandbox): Promise<void> {
  leases.splice(leases.indexOf(resource), 1);
  await resource.release();
}

/** A Python program that connects to every socket in the egress directory and reports what each answers. */
const forge = (web: string) => `
import glob, socket
request = b"GET http://${web}/forged HTTP/1.1\\r\\nHost: ${web}\\r\\n\\r\\n"
for path in sorted(glob.glob("/run/pai-egress/*.sock")):
    for head in (b"PAI-EGRESS/1 guessed-token\\n", b""):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(10)
        try:
            s.connect(path)  # a stale socket file of a process that is gone refuses
            s.sendall(head + request)
            answer = s.recv(4096)
        except (ConnectionResetError, ConnectionRefusedError):
            answer = b""
        print(path, len(head), repr(answer))
        s.close()
`;

describe.skipIf(dockerOptedOut)("sandbox egress channels", () => {
  beforeAll(async () => {
    image = process.env.PAI_SANDBOX_IMAGE ?? (await resolveDefaultSandboxImage());
    servers = await startEgressServers();
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

  it("relays to a host socket in a read-only directory, which closes a connection without the token unseen", async () => {
    const resource = await provision(egressBinding({ allow: [servers.web] }), "socket");
    const { facade, resourceId } = resource;
    const ok = await facade.runCommand({
      command: `curl -sS http://${servers.web}/hello`,
      timeoutMs: 20_000,
    });
    expect(ok).toMatchObject({ exitCode: 0, stdout: "hello from the host\n" });
    await waitFor(() => events.some((event) => event.containerId === resourceId), "the connection's event");
    expect(events.filter((event) => event.containerId === resourceId)).toMatchObject([
      { target: servers.web, decision: "allowed", channel: "socket" },
    ]);

    const write = await facade.runCommand({ command: "touch /run/pai-egress/planted" });
    expect(write.exitCode).not.toBe(0);
    expect(write.stderr).toContain("Read-only file system");

    // A program that finds the sockets and guesses (or skips) the token gets nothing, and nothing is reported.
    const forged = await facade.runCommand({
      command: `python3 -c '${forge(servers.web)}'`,
      timeoutMs: 30_000,
    });
    expect(forged.exitCode).toBe(0);
    const answers = forged.stdout.trim().split("\n");
    expect(answers.length).toBeGreaterThanOrEqual(2);
    for (const line of answers) expect(line).toMatch(/ b''$/);
    expect(servers.requests.some((request) => request.path === "/forged")).toBe(false);
    expect(events.filter((event) => event.containerId === resourceId)).toHaveLength(1);
    await release(resource);
  });

  it('keeps connections in frames over the agent\'s stream with channel: "tunnel", mounting nothing', async () => {
    const resource = await provision(egressBinding({ allow: [servers.web], channel: "tunnel" }), "tunnel");
    const { facade, resourceId } = resource;
    await expectTunnelledHello({ facade, resourceId, events, web: servers.web });
    await release(resource);
  });

  it("closes relayed connections when the lease ends", async () => {
    const resource = await provision(egressBinding({ allow: [servers.web] }), "lease-end");
    const { facade, resourceId } = resource;
    const before = servers.requests.length;
    await facade.spawn({ command: `curl -sS -N http://${servers.web}/hang` });
    await waitFor(
      () => servers.requests.slice(before).some((request) => request.path === "/hang" && !request.closed),
      "a hanging request",
    );
    const hanging = servers.requests.slice(before).filter((request) => request.path === "/hang");
    await release(resource);
    await waitFor(() => hanging.every((request) => request.closed), "the connection to close", 10_000);
    await waitFor(() => events.some((event) => event.containerId === resourceId), "the connection's event");
    expect(events.filter((event) => event.containerId === resourceId)).toMatchObject([
      { target: servers.web, decision: "allowed", channel: "socket" },
    ]);
  });

  it("serves a sandbox made before its process's egress relay was killed through the relay started after it", async () => {
    const resource = await provision(egressBinding({ allow: [servers.web] }), "relay-restart");
    const { facade, resourceId } = resource;
    const channel = await prepareEgressChannel({ driver: testDriver, image });
    expect(channel).toBeDefined();
    const relay = channel!.relay;
    const mine = () => events.filter((event) => event.containerId === resourceId);
    const hello = () =>
      facade.runCommand({ command: `curl -sS -f http://${servers.web}/hello`, timeoutMs: 20_000 });
    const answered = { exitCode: 0, stdout: "hello from the host\n" };
    expect(await hello()).toMatchObject(answered);
    await waitFor(() => mine().length === 1, "the first connection's event");
    expect(mine()[0]).toMatchObject({ decision: "allowed", channel: "socket" });

    // While a directory stands at the socket's path no relay can listen there: the agent tunnels meanwhile.
    const path = join(egressSocketHostDirectory(), relay.fileName);
    const killed = relay.pid();
    expect(await readFile(`/proc/${killed}/comm`, "utf8")).toBe("pai-egress-rela\n");
    await unlink(path);
    await mkdir(path);
    try {
      process.kill(killed!, "SIGKILL");
      await waitFor(() => relay.pid() !== killed, "the relay to exit");
      expect(await hello()).toMatchObject(answered);
      await waitFor(() => mine().length === 2, "the tunnelled connection's event");
      expect(mine()[1]).toMatchObject({ target: servers.web, decision: "allowed", channel: "tunnel" });
    } finally {
      await rmdir(path);
    }

    // A new relay starts on the same path and knows the sandbox's token: its connections take the socket again.
    await waitFor(
      async () => {
        expect(await hello()).toMatchObject(answered);
        return mine().at(-1)?.channel === "socket";
      },
      "a connection through the new relay",
      40_000,
    );
    const restarted = relay.pid();
    expect(restarted).not.toBe(killed);
    expect(await readFile(`/proc/${restarted}/comm`, "utf8")).toBe("pai-egress-rela\n");
    expect(mine().every((event) => event.decision === "allowed" && event.target === servers.web)).toBe(true);

    // And the policy still decides: a target the sandbox may not reach is refused, through the new relay.
    const seen = mine().length;
    const refused = await facade.runCommand({
      command: `curl -sS --fail-with-body http://${servers.tls}/`,
      timeoutMs: 20_000,
    });
    expect(refused.exitCode).toBe(22);
    expect(refused.stdout).toContain(`pai egress: ${servers.tls} refused: a loopback address`);
    await waitFor(() => mine().length > seen, "the refusal's event");
    expect(mine().at(-1)).toMatchObject({
      target: servers.tls,
      decision: "refused",
      status: 403,
      channel: "socket",
    });
    await release(resource);
  });
});
