// The probe of this process's /proc, against real processes: its own place, a process that ended (reaped or a
// zombie), a pid that now belongs to another process, and records it must never judge.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, readlinkSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { createLocalProcessProbe } from "./local-process-probe.ts";

const linux = process.platform === "linux";
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

/** Field 22 of a live process's stat. */
function startTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
}

function started(argv: string[]): ChildProcess {
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "pipe", "ignore"] });
  children.push(child);
  return child;
}

describe.skipIf(!linux)("createLocalProcessProbe", () => {
  const probe = createLocalProcessProbe();
  const here = () => ({ bootId: probe.place!.bootId, pidNamespace: probe.place!.pidNamespace });

  it("knows where this process runs: the boot, its pid namespace and its start", () => {
    expect(probe.place).toEqual({
      bootId: readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim(),
      pidNamespace: readlinkSync("/proc/self/ns/pid"),
      processStartTicks: startTicks(process.pid),
    });
  });

  it("calls a live process alive, and gone once it was killed and reaped", async () => {
    const child = started(["sleep", "600"]);
    const recorded = { pid: child.pid!, ...here(), processStartTicks: startTicks(child.pid!) };
    expect(await probe.isGone(recorded)).toBe(false);
    expect(await probe.isGone({ pid: process.pid, ...probe.place! })).toBe(false);
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
    expect(await probe.isGone(recorded)).toBe(true);
  });

  it("calls a zombie gone: its pid is still there, its process is not", async () => {
    // The shell forks `sleep 0.3`, tells its pid, and becomes a `sleep` that never reaps it.
    const parent = started(["sh", "-c", "sleep 0.3 & echo $!; exec sleep 600"]);
    const pid = Number(await new Promise<string>((resolve) => parent.stdout!.once("data", resolve)));
    const recorded = { pid, ...here(), processStartTicks: startTicks(pid) };
    expect(await probe.isGone(recorded)).toBe(false);
    const deadline = Date.now() + 10_000;
    while (!readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ") && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await probe.isGone(recorded)).toBe(true);
  });

  it("calls a pid that belongs to a process started at another time gone", async () => {
    // This process's own pid, as a process that had it before (or gets it after) would have recorded it.
    expect(
      await probe.isGone({
        pid: process.pid,
        ...here(),
        processStartTicks: probe.place!.processStartTicks - 1,
      }),
    ).toBe(true);
    expect(
      await probe.isGone({
        pid: process.pid,
        ...here(),
        processStartTicks: probe.place!.processStartTicks + 1,
      }),
    ).toBe(true);
  });

  it("never judges a process of another boot or pid namespace, or one that recorded no place", async () => {
    const child = started(["true"]);
    await new Promise((resolve) => child.once("exit", resolve));
    const dead = { pid: child.pid!, ...here(), processStartTicks: 1 };
    expect(await probe.isGone(dead)).toBe(true);
    expect(await probe.isGone({ ...dead, bootId: "another-boot" })).toBe(false);
    expect(await probe.isGone({ ...dead, pidNamespace: "pid:[1]" })).toBe(false);
    expect(await probe.isGone({ pid: child.pid! })).toBe(false);
    expect(await probe.isGone({ ...dead, processStartTicks: undefined })).toBe(false);
  });
});
