// Which owners are alive, as one process's registry sees them in a store: the heartbeat rule on any host, and at
// once for processes of its own machine and pid namespace that are gone (real processes, killed).
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import type { OwnerRecord } from "../threads/thread-store.ts";
import { createLocalProcessProbe } from "./local-process-probe.ts";
import { createOwnerRegistry } from "./owner-registry.ts";

const linux = process.platform === "linux";
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

/** A real process, and the owner record it would have written (its heartbeat `ageMs` old). */
function processRecord(ownerId: string, ageMs: number): { child: ChildProcess; record: OwnerRecord } {
  const child = spawn("sleep", ["600"], { stdio: "ignore" });
  children.push(child);
  const stat = readFileSync(`/proc/${child.pid}/stat`, "utf8");
  const place = createLocalProcessProbe().place!;
  return {
    child,
    record: {
      ownerId,
      host: "this-host",
      pid: child.pid!,
      startedAt: Date.now() - 60_000,
      heartbeatAt: Date.now() - ageMs,
      bootId: place.bootId,
      pidNamespace: place.pidNamespace,
      processStartTicks: Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]),
    },
  };
}

async function killed(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

describe.skipIf(!linux)("createOwnerRegistry", () => {
  it("records where this process runs with each heartbeat", async () => {
    const store = createMemoryThreadStore();
    const owners = createOwnerRegistry({ store, ownerId: "self" });
    await owners.heartbeat();
    expect(await store.listOwners()).toEqual([
      expect.objectContaining({ ownerId: "self", pid: process.pid, ...createLocalProcessProbe().place }),
    ]);
  });

  it("declares an owner of this machine dead as soon as its process is gone, whatever its heartbeat", async () => {
    const store = createMemoryThreadStore();
    const owners = createOwnerRegistry({ store, ownerId: "self", ownerTtlMs: 600_000 });
    const alive = processRecord("alive", 0);
    const victim = processRecord("victim", 0);
    await store.heartbeatOwner(alive.record);
    await store.heartbeatOwner(victim.record);
    expect([...(await owners.liveOwners())].sort()).toEqual(["alive", "self", "victim"]);
    expect(await owners.deadOwners()).toEqual(new Set());

    await killed(victim.child);

    expect([...(await owners.liveOwners())].sort()).toEqual(["alive", "self"]);
    expect(await owners.deadOwners()).toEqual(new Set(["victim"]));
    expect(await owners.goneOwners()).toEqual(new Set(["victim"]));
  });

  it("keeps the heartbeat rule for owners of another machine or pid namespace, and for a stale live one", async () => {
    const store = createMemoryThreadStore();
    const owners = createOwnerRegistry({ store, ownerId: "self", ownerTtlMs: 10_000 });
    const elsewhere = processRecord("elsewhere", 0);
    const otherNamespace = processRecord("other-namespace", 0);
    const staleElsewhere = processRecord("stale-elsewhere", 20_000);
    const staleHere = processRecord("stale-here", 20_000);
    await killed(elsewhere.child);
    await killed(otherNamespace.child);
    await killed(staleElsewhere.child);
    await store.heartbeatOwner({ ...elsewhere.record, bootId: "another-machine" });
    await store.heartbeatOwner({ ...otherNamespace.record, pidNamespace: "pid:[4026532999]" });
    await store.heartbeatOwner({ ...staleElsewhere.record, bootId: "another-machine" });
    await store.heartbeatOwner(staleHere.record);

    // Their processes are gone from here, but nothing here can tell: only their heartbeats count.
    expect([...(await owners.liveOwners())].sort()).toEqual(["elsewhere", "other-namespace", "self"]);
    expect([...(await owners.deadOwners())].sort()).toEqual(["stale-elsewhere", "stale-here"]);
    // A live process whose heartbeat went stale is dead by the heartbeat rule, but not gone.
    expect(await owners.goneOwners()).toEqual(new Set());
  });
});
