// A black-box fuzz of the host from inside a real sandbox: a program throws garbage at the host sockets its
// container sees (this PAI process's egress relay `<pid>.sock` and agent dial socket `<pid>.agent.sock` in the
// read-only /run/pai-egress) — empty, binary, overlong lines, forged tokens, 70 KB heads, 800 connections each, then
// 300 half-open connections held on each — while another sandbox uses egress. Afterwards the relay is the same
// process, egress and both agents work, and this process's memory and descriptors and the relay's are bounded.
// (Other PAI processes' sockets in the directory, those of test files running beside this one, are left alone.)
import { readdir, readFile } from "node:fs/promises";
import { prepareEgressChannel } from "@pai/container-agent";
import {
  type DockerSandboxBinding,
  dockerSandbox,
  type ProvisionedSandbox,
  resolveDefaultSandboxImage,
} from "@pai/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dockerOptedOut, removePoolContainers, testDriver, uniquePoolId, waitFor } from "./docker-helpers.ts";
import { type EgressServers, startEgressServers } from "./fixtures/egress-servers.ts";

const CONNECTIONS_PER_SOCKET = 800;
const HELD_PER_SOCKET = 300;
/** How long the attacker holds its half-open connections while the victim works. */
const HOLD_SECONDS = 8;
/** No request of the victim's may take longer while the attack runs (a liveness bound, not a speed claim). */
const VICTIM_REQUEST_BOUND_MS = 10_000;

/** The attacker: a Python program; argv: the socket paths; prints what it did as JSON. */
const ATTACK = `
import json, os, socket, sys, time
paths = sys.argv[1:]
payloads = [
    b"",
    os.urandom(512),
    b"A" * 70000,
    b"\\n" * 2000,
    b"\\x00" * 4096,
    b"PAI-EGRESS/1 " + b"x" * 43 + b"\\n",
    b"PAI-EGRESS/1 " + b"x" * 43 + b"\\nCONNECT " + b"h" * 70000 + b"\\r\\n\\r\\n",
    b"PAI-EGRESS/1 " + os.urandom(60) + b"\\n",
    b"PAI-EGRESS/1 \\n",
    b"PAI-AGENT/1 " + b"y" * 43 + b"\\n" + os.urandom(2048),
    b"PAI-AGENT/1 " + b"z" * 400 + b"\\n",
    b"PAI-AGENT/2 token\\n",
    b"GET / HTTP/1.1\\r\\nHost: x\\r\\n" + b"X-Pad: " + b"p" * 70000 + b"\\r\\n\\r\\n",
]
sent = refused = 0
for path in paths:
    for i in range(${CONNECTIONS_PER_SOCKET}):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(2)
        try:
            s.connect(path)
            s.sendall(payloads[i % len(payloads)])
            if i % 3 == 0:
                s.shutdown(socket.SHUT_WR)
                s.recv(1)
            sent += 1
        except OSError:
            refused += 1
        s.close()
held = []
for path in paths:
    for i in range(${HELD_PER_SOCKET}):
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(path)
            s.send(b"PAI-EG")
            held.append(s)
        except OSError:
            refused += 1
print(json.dumps({"sockets": len(paths), "sent": sent, "held": len(held), "refused": refused}), flush=True)
time.sleep(${HOLD_SECONDS})
`;

let servers: EgressServers;
let binding: DockerSandboxBinding;
let poolId: string;
let image: string;
const leases: ProvisionedSandbox[] = [];

/** Open descriptors of a process. */
const fdCount = async (pid: number | "self") => (await readdir(`/proc/${pid}/fd`)).length;

describe.skipIf(dockerOptedOut)("hostile bytes from inside a sandbox at the host's sockets", () => {
  beforeAll(async () => {
    servers = await startEgressServers();
    poolId = uniquePoolId("host-socket-fuzz");
    image = process.env.PAI_SANDBOX_IMAGE ?? (await resolveDefaultSandboxImage());
    binding = dockerSandbox({ image, poolId, pool: { min: 0, max: 2 }, network: { allow: [servers.web] } });
  });

  afterAll(async () => {
    try {
      for (const lease of leases) await lease.release().catch(() => undefined);
      await binding?.close();
    } finally {
      if (poolId) await removePoolContainers(poolId);
      await servers?.close();
    }
  });

  it("leaves the relay the same process, egress and agents working, and memory and descriptors bounded", async () => {
    const provision = async (key: string) => {
      const lease = await binding.provision({
        leaseKey: `thread:${key}`,
        lifetime: "thread",
        signal: new AbortController().signal,
      });
      leases.push(lease);
      return lease.facade;
    };
    const [attacker, victim] = await Promise.all([provision("attacker"), provision("victim")]);
    const hello = async () => {
      const startedAt = Date.now();
      const answer = await victim.runCommand({
        command: `curl -sS -f http://${servers.web}/hello`,
        timeoutMs: 30_000,
      });
      return { answer, tookMs: Date.now() - startedAt };
    };
    expect((await hello()).answer).toMatchObject({ exitCode: 0, stdout: "hello from the host\n" });

    const channel = await prepareEgressChannel({ driver: testDriver, image });
    expect(channel).toBeDefined();
    const relayPid = channel!.relay.pid()!;
    const sockets = [`/run/pai-egress/${process.pid}.sock`, `/run/pai-egress/${process.pid}.agent.sock`];
    const seen = await attacker.runCommand({ command: `ls ${sockets.join(" ")}` });
    expect(seen.exitCode, seen.stderr).toBe(0);
    const before = {
      rss: process.memoryUsage().rss,
      fds: await fdCount("self"),
      relayFds: await fdCount(relayPid),
    };

    await attacker.writeFiles([{ path: "attack.py", content: ATTACK }]);
    const attack = attacker.runCommand({
      command: `python3 attack.py ${sockets.join(" ")}`,
      timeoutMs: 180_000,
    });
    // The victim keeps working while the attack runs (until the attacker has held its connections for a while).
    const during: number[] = [];
    let report: { sockets: number; sent: number; held: number; refused: number } | undefined;
    void attack.then((done) => {
      report = JSON.parse(done.stdout.trim().split("\n")[0] ?? "null");
    });
    let peakFds = before.fds;
    let peakRelayFds = before.relayFds;
    while (report === undefined) {
      const { answer, tookMs } = await hello();
      expect(answer).toMatchObject({ exitCode: 0, stdout: "hello from the host\n" });
      during.push(tookMs);
      peakFds = Math.max(peakFds, await fdCount("self"));
      peakRelayFds = Math.max(peakRelayFds, await fdCount(relayPid));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const done = await attack;
    expect(done.exitCode, done.stderr).toBe(0);
    expect(report).toMatchObject({ sockets: 2 });
    expect(report!.sent + report!.refused).toBeGreaterThanOrEqual(2 * CONNECTIONS_PER_SOCKET);
    expect(report!.sent).toBeGreaterThan(CONNECTIONS_PER_SOCKET); // most got through to the host's readers
    expect(during.length).toBeGreaterThan(0);
    expect(Math.max(...during)).toBeLessThan(VICTIM_REQUEST_BOUND_MS);

    // The relay never crashed: the same process, still serving; the attacker's own agent and egress work too.
    expect(channel!.relay.pid()).toBe(relayPid);
    expect(await readFile(`/proc/${relayPid}/comm`, "utf8")).toBe("pai-egress-rela\n");
    expect((await hello()).answer).toMatchObject({ exitCode: 0 });
    const own = await attacker.runCommand({ command: `curl -sS -f http://${servers.web}/hello` });
    expect(own).toMatchObject({ exitCode: 0, stdout: "hello from the host\n" });
    expect(channel!.relay.refused()).toBeGreaterThan(0);

    // Bounded: silent connections are capped at 64 per socket, so descriptors never grew by the hundreds held,
    // and once the attacker is gone they come back; memory did not grow with what was sent (~2 × 800 × 70 KB).
    expect(peakFds - before.fds).toBeLessThan(HELD_PER_SOCKET);
    expect(peakRelayFds - before.relayFds).toBeLessThan(HELD_PER_SOCKET);
    await waitFor(
      async () => (await fdCount("self")) <= before.fds + 16,
      "this process's descriptors to settle",
    );
    await waitFor(
      async () => (await fdCount(relayPid)) <= before.relayFds + 16,
      "the relay's descriptors to settle",
    );
    expect(process.memoryUsage().rss - before.rss).toBeLessThan(128 * 1024 * 1024);
  }, 300_000);
});
