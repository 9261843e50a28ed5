import { mkdir, readFile } from "node:fs/promises";
import { execa } from "execa";
import type { CheckResult } from "./check-result.ts";
import type { EngineTarget } from "./inspect-engine.ts";

const check = "cgroups";
const unified = "/sys/fs/cgroup/unified";

/** The mount points of this machine (`/proc/self/mountinfo`, fifth field). */
async function mountPoints(): Promise<Set<string>> {
  const text = await readFile("/proc/self/mountinfo", "utf8");
  return new Set(text.split("\n").map((line) => line.split(" ")[4] ?? ""));
}

/**
 * The step of `pai engine setup` that lets crun run on a hybrid cgroup host (cgroup v1, with a cgroup2 hierarchy
 * at `/sys/fs/cgroup/unified`): crun refuses one whose cgroup2 hierarchy holds controllers, so each of those
 * controllers (unused there: runc uses the v1 ones) is bound to a v1 hierarchy of its own at
 * `/sys/fs/cgroup/<controller>`. Mounts do not survive a reboot: run it after each boot, before containers start
 * on crun. Nothing to do on a pure cgroup v1 or v2 host.
 */
export async function setUpCgroups(options: {
  engine: EngineTarget;
  root: boolean;
  signal: AbortSignal;
}): Promise<CheckResult> {
  const { engine, signal } = options;
  if (!engine.local) {
    return {
      check,
      status: "skipped",
      message: `the engine runs on another host (${engine.info?.hostname}): its cgroups are checked there`,
      fix: "run `npx pai engine setup` as root on that host",
    };
  }
  let controllers: string[];
  try {
    controllers = (await readFile(`${unified}/cgroup.controllers`, "utf8")).split(/\s+/).filter(Boolean);
  } catch {
    return { check, status: "ok", message: "not a hybrid cgroup host: nothing to bind for crun" };
  }
  const mounted = await mountPoints();
  const unbound = controllers.filter((controller) => !mounted.has(`/sys/fs/cgroup/${controller}`));
  if (unbound.length === 0) {
    return {
      check,
      status: "ok",
      message:
        controllers.length === 0
          ? "hybrid cgroup host whose cgroup2 hierarchy holds no controllers: crun can use it"
          : `hybrid cgroup host, controllers ${controllers.join(", ")} bound to v1 hierarchies for crun`,
    };
  }
  if (!options.root) {
    return {
      check,
      status: "failed",
      message: `hybrid cgroup host: crun refuses it until ${unbound.join(", ")} are bound to v1 hierarchies, which needs root`,
      fix: "run `sudo npx pai engine setup`",
    };
  }
  const failures: string[] = [];
  for (const controller of unbound) {
    const target = `/sys/fs/cgroup/${controller}`;
    await mkdir(target, { recursive: true }).catch(() => undefined);
    const result = await execa("mount", ["-t", "cgroup", "-o", controller, "cgroup", target], {
      reject: false,
      cancelSignal: signal,
    });
    if (result.failed) failures.push(`${controller} (${result.stderr.trim() || result.shortMessage})`);
  }
  if (failures.length > 0) {
    return {
      check,
      status: "failed",
      message: `could not bind ${failures.join(", ")} to a v1 hierarchy: crun may refuse to start containers`,
      fix: "bind them by hand (`mount -t cgroup -o <controller> cgroup /sys/fs/cgroup/<controller>`), or keep runc",
    };
  }
  return {
    check,
    status: "changed",
    message: `bound cgroup controllers ${unbound.join(", ")} to v1 hierarchies (crun needs an empty cgroup2 in hybrid mode)`,
  };
}
