// The `pai` command line (capabilities/sandbox/src/cli/main.ts) run as a user runs it: a child process on the real
// engine of this machine, which scripts/docker-engine equipped (crun, the pai-disk plugin). Root, as the engine's
// host needs. The shared engine and its pai-disk plugin are only read: the plugin tests run a second plugin under a
// name, socket, pid file and state folder of their own, and dockerd is never restarted.
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { beforeAll, describe, expect, it } from "vitest";
import { docker, dockerOptedOut, waitFor } from "../sandbox/docker-helpers.ts";

const MiB = 1024 * 1024;
const root = join(import.meta.dirname, "..", "..");
const main = join(root, "capabilities", "sandbox", "src", "cli", "main.ts");

/** Runs `pai <args>` on this Node, as `npx pai` would; `env` is added to this process's environment. */
async function pai(args: readonly string[], env: Record<string, string> = {}) {
  const result = await execa(process.execPath, [main, ...args], {
    env,
    reject: false,
    timeout: 120_000,
    stdin: "ignore",
  });
  return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr };
}

const lines = (stdout: string) => stdout.split("\n").filter(Boolean);

/** The pid a pid file names, or `undefined`. */
async function pidIn(pidFile: string): Promise<number | undefined> {
  const text = await readFile(pidFile, "utf8").catch(() => undefined);
  return text === undefined ? undefined : Number.parseInt(text, 10);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** One call of the volume plugin protocol on `socket`, as the engine makes it. */
function callPlugin(socket: string, path: string, body: object): Promise<Record<string, any>> {
  return new Promise((resolve, reject) => {
    const call = request({ socketPath: socket, path, method: "POST" }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        text += chunk;
      });
      response.on("end", () => resolve(JSON.parse(text)));
      response.on("error", reject);
    });
    call.on("error", reject);
    call.end(JSON.stringify(body));
  });
}

/** The plugin on `socket` makes a 16 MiB disk (mkfs, loop mount), tells its size, and drops it. */
async function expectPluginServes(socket: string): Promise<void> {
  const Name = `pai-clitest-${randomBytes(4).toString("hex")}`;
  expect(
    await callPlugin(socket, "/VolumeDriver.Create", { Name, Opts: { size: String(16 * MiB) } }),
  ).toEqual({});
  try {
    const { Volume } = await callPlugin(socket, "/VolumeDriver.Get", { Name });
    expect(Volume.Status).toMatchObject({ sizeBytes: 16 * MiB });
  } finally {
    expect(await callPlugin(socket, "/VolumeDriver.Remove", { Name })).toEqual({});
  }
}

/**
 * A second disk plugin of a test, with its socket where engines do not look: an engine that met a plugin in
 * /run/docker/plugins keeps asking it until the engine restarts, and waits ~15 s for it at every look-up of an
 * unknown volume once it is gone. `remove` stops its daemon and removes its files.
 */
async function testPlugin() {
  const name = `pai-disk-clitest-${randomBytes(3).toString("hex")}`;
  const folder = await mkdtemp(join(tmpdir(), "pai-disk-clitest-"));
  const socket = join(folder, "plugin.sock");
  const stateDir = join(folder, "state");
  const pidFile = `/var/run/${name}-plugin.pid`;
  const log = `/var/log/${name}-plugin.log`;
  return {
    name,
    socket,
    stateDir,
    pidFile,
    log,
    /** Options of `pai doctor` and `pai engine setup` that name it. */
    options: ["--plugin-name", name, "--plugin-socket", socket],
    async remove() {
      const pid = await pidIn(pidFile);
      if (pid !== undefined && alive(pid)) {
        process.kill(pid, "SIGTERM");
        await waitFor(() => !alive(pid), "the plugin to stop");
      }
      await Promise.all([folder, pidFile, log].map((path) => rm(path, { recursive: true, force: true })));
    },
  };
}

const engineRuntimes = async () =>
  Object.keys(JSON.parse(await docker("info", "--format", "{{json .Runtimes}}")));

describe.skipIf(dockerOptedOut)("pai command line on the real engine", () => {
  beforeAll(async () => {
    // The agent binary `pai doctor` looks for (scripts/setup builds it; a no-op when its sources did not change).
    await execa("bash", [join(root, "capabilities", "container-agent", "native", "build.sh")], {
      stdin: "ignore",
    });
  }, 600_000);

  it("doctor passes on this machine's equipped engine, one OK line per check", async () => {
    const { exitCode, stdout } = await pai(["doctor"]);
    expect(lines(stdout)).toEqual([
      expect.stringMatching(
        /^OK engine: unix:\/\/\/var\/run\/docker\.sock .*answers: Docker .* on (x86_64|aarch64), this machine$/,
      ),
      "OK runtime: crun registered: sandboxes start on crun",
      expect.stringMatching(/^OK disk plugin: pai-disk answers on \/run\/docker\/plugins\/pai-disk\.sock/),
      expect.stringMatching(/^OK agent: @pai\/container-agent has pai-agent for /),
      // npm test builds both images first (scripts/setup all)
      expect.stringMatching(
        /^OK sandbox image: pai\/sandbox:[0-9a-f]{12} is on the engine, current \(built on /,
      ),
      expect.stringMatching(
        /^OK browser image: pai\/browser:[0-9a-f]{12} is on the engine, current \(built on /,
      ),
    ]);
    expect(exitCode).toBe(0);
  });

  it("doctor --json tells the same checks as one JSON object", async () => {
    const { exitCode, stdout } = await pai(["doctor", "--json"]);
    expect(exitCode).toBe(0);
    const report = JSON.parse(stdout);
    expect(report).toMatchObject({ ok: true, engine: "unix:///var/run/docker.sock" });
    expect(
      report.checks.map((check: { check: string; status: string }) => [check.check, check.status]),
    ).toEqual([
      ["engine", "ok"],
      ["runtime", "ok"],
      ["disk plugin", "ok"],
      ["agent", "ok"],
      ["sandbox image", "ok"],
      ["browser image", "ok"],
    ]);
  });

  it("doctor names an engine that does not answer, with the fix, and fails", async () => {
    const { exitCode, stdout } = await pai(["doctor"], { DOCKER_HOST: "unix:///nonexistent.sock" });
    expect(exitCode).toBe(1);
    expect(stdout).toMatch(
      /^FAIL engine: no engine answers at unix:\/\/\/nonexistent\.sock \(DOCKER_HOST\): .*\. Fix: start Docker/m,
    );
    // What needs the engine is not checked; the plugin of this machine still is.
    expect(stdout).toMatch(/^SKIP runtime: needs an engine that answers$/m);
    expect(stdout).toMatch(/^SKIP agent: needs an engine that answers$/m);
    expect(stdout).toMatch(/^SKIP sandbox image: needs an engine that answers$/m);
    expect(stdout).toMatch(/^OK disk plugin: pai-disk answers/m);
  });

  it("usage errors exit 2: an unknown command, an unknown option", async () => {
    const unknown = await pai(["frobnicate"]);
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toMatch(/^pai: unknown command frobnicate\nusage: pai <command>/);
    const option = await pai(["doctor", "--frobnicate"]);
    expect(option.exitCode).toBe(2);
    expect(option.stderr).toContain("usage: pai doctor [options]");
  });

  it("engine setup on the equipped engine changes nothing, twice", async () => {
    const config = "/etc/docker/daemon.json";
    const before = await Promise.all([
      readFile(config, "utf8"),
      stat(config),
      pidIn("/var/run/pai-disk-plugin.pid"),
    ]);
    for (let run = 0; run < 2; run++) {
      const { exitCode, stdout } = await pai(["engine", "setup"]);
      expect(lines(stdout)).toEqual([
        expect.stringMatching(/^OK engine: /),
        expect.stringMatching(/^OK cgroups: /),
        "OK crun: runtime crun registered with the engine",
        expect.stringMatching(/^OK disk plugin: pai-disk answers on \/run\/docker\/plugins\/pai-disk\.sock/),
        "engine setup: everything in place, nothing changed",
      ]);
      expect(exitCode).toBe(0);
    }
    const [text, { mtimeMs }, pluginPid] = before;
    expect(await readFile(config, "utf8")).toBe(text);
    expect((await stat(config)).mtimeMs).toBe(mtimeMs);
    expect(await pidIn("/var/run/pai-disk-plugin.pid")).toBe(pluginPid);
    expect(await engineRuntimes()).toContain("crun");
    const doctor = await pai(["doctor"]);
    expect(doctor.stdout).toMatch(/^OK disk plugin: pai-disk answers/m);
  });

  it("engine setup starts a disk plugin that is not running, and again after it was killed", async () => {
    const { name, socket, stateDir, pidFile, log, options: plugin, remove } = await testPlugin();
    const setup = () => pai(["engine", "setup", ...plugin, "--plugin-state-dir", stateDir]);
    try {
      const first = await setup();
      expect(first.stdout).toMatch(
        new RegExp(
          `^DONE disk plugin: started ${name} \\(pid \\d+\\) on ${socket}, state in ${stateDir}`,
          "m",
        ),
      );
      expect(first.stdout).toMatch(/^engine setup: done \(1 changed\)$/m);
      expect(first.exitCode).toBe(0);
      const pid = (await pidIn(pidFile)) as number;
      // It outlived the command that started it.
      expect(alive(pid)).toBe(true);
      await expectPluginServes(socket);
      expect(await readFile(log, "utf8")).toContain(`pai-disk: serving ${socket}`);
      // It keeps only what mounting needs: CAP_SYS_ADMIN in its bounding set, no_new_privs.
      const status = await readFile(`/proc/${pid}/status`, "utf8");
      expect(/^NoNewPrivs:\s*(\d)/m.exec(status)?.[1]).toBe("1");
      const sysAdminOnly = (1n << 21n).toString(16).padStart(16, "0");
      expect(/^CapBnd:\s*([0-9a-f]+)/m.exec(status)?.[1]).toBe(sysAdminOnly);
      expect(/^CapEff:\s*([0-9a-f]+)/m.exec(status)?.[1]).toBe(sysAdminOnly);
      expect(/^CapInh:\s*([0-9a-f]+)/m.exec(status)?.[1]).toBe("0".repeat(16));

      // A crash: the daemon dies, its socket file stays.
      process.kill(pid, "SIGKILL");
      await waitFor(() => !alive(pid), "the plugin to die");
      const doctor = await pai(["doctor", ...plugin]);
      expect(doctor.exitCode).toBe(1);
      expect(doctor.stdout).toMatch(
        new RegExp(
          `^FAIL disk plugin: nothing answers on ${socket}: .*\\. Fix: run \`npx pai engine setup\` as root, or set limits: \\{ diskBytes: null \\}`,
          "m",
        ),
      );

      const again = await setup();
      expect(again.exitCode).toBe(0);
      expect(again.stdout).toMatch(new RegExp(`^DONE disk plugin: started ${name} \\(pid \\d+\\)`, "m"));
      const restarted = (await pidIn(pidFile)) as number;
      expect(restarted).not.toBe(pid);
      await expectPluginServes(socket);
      expect((await pai(["doctor", ...plugin])).stdout).toMatch(/^OK disk plugin: /m);

      const third = await setup();
      expect(third.exitCode).toBe(0);
      expect(third.stdout).toContain(`OK disk plugin: ${name} answers on ${socket} (pid ${restarted})`);
      expect(third.stdout).toMatch(/^engine setup: everything in place, nothing changed$/m);
      expect(await pidIn(pidFile)).toBe(restarted);
    } finally {
      await remove();
    }
  }, 120_000);

  it("the compiled command line (dist/cli/main.js, what `npx pai` runs) starts the compiled plugin", async () => {
    // Plain node: no @pai/source condition, so every @pai package resolves to its dist/, as in a user's app.
    await execa(process.execPath, [
      join(root, "scripts", "build-packages.ts"),
      "pool",
      "capabilities/sandbox",
    ]);
    const plugin = await testPlugin();
    try {
      const compiled = join(root, "capabilities", "sandbox", "dist", "cli", "main.js");
      const result = await execa(
        process.execPath,
        [compiled, "engine", "setup", ...plugin.options, "--plugin-state-dir", plugin.stateDir],
        { env: { NODE_OPTIONS: "" }, reject: false, stdin: "ignore" },
      );
      expect(result.stdout).toMatch(new RegExp(`^DONE disk plugin: started ${plugin.name} `, "m"));
      expect(result.exitCode).toBe(0);
      const pid = (await pidIn(plugin.pidFile)) as number;
      const commandLine = (await readFile(`/proc/${pid}/cmdline`, "utf8")).split("\0");
      expect(commandLine[1]).toBe(join(root, "pool", "dist", "disk-plugin", "run-disk-volume-plugin.js"));
      await expectPluginServes(plugin.socket);
    } finally {
      await plugin.remove();
    }
  }, 300_000);

  it("engine setup registers crun with a running engine that lacks it: daemon.json, then a reload", async () => {
    // A throwaway engine of this test (its own socket, data, exec root, pid file and daemon.json without crun):
    // the shared engine already has crun and is never reloaded.
    const folder = await mkdtemp("/run/pai-clitest-");
    const socket = join(folder, "docker.sock");
    const config = join(folder, "daemon.json");
    const pidFile = join(folder, "docker.pid");
    const env = { DOCKER_HOST: `unix://${socket}` };
    const runtimes = async () =>
      Object.keys(JSON.parse(await docker("-H", env.DOCKER_HOST, "info", "--format", "{{json .Runtimes}}")));
    let dockerd: ReturnType<typeof execa> | undefined;
    try {
      await writeFile(config, '{ "log-level": "warn" }\n');
      const log = { file: join(folder, "dockerd.log"), append: true };
      const where = ["--data-root", join(folder, "data"), "--exec-root", join(folder, "exec")];
      dockerd = execa(
        "dockerd",
        [
          ...["--config-file", config, "--pidfile", pidFile, "--host", env.DOCKER_HOST, ...where],
          ...["--bridge=none", "--iptables=false", "--ip-forward=false", "--ip-masq=false"],
        ],
        { stdin: "ignore", stdout: log, stderr: log, reject: false },
      );
      await waitFor(
        async () => (await runtimes().catch(() => undefined)) !== undefined,
        "the engine",
        60_000,
      );
      expect(await runtimes()).not.toContain("crun");
      const doctor = await pai(["doctor"], env);
      expect(doctor.stdout).toMatch(
        /^FAIL runtime: the engine has no runtime crun: sandboxes start on runc/m,
      );

      const { exitCode, stdout } = await pai(
        ["engine", "setup", "--config", config, "--pid-file", pidFile],
        env,
      );
      expect(stdout).toMatch(
        new RegExp(
          `^DONE crun: added runtime crun \\(\\S+\\) to ${config} and reloaded dockerd \\(pid ${dockerd.pid}\\)`,
          "m",
        ),
      );
      expect(exitCode).toBe(0);
      expect(await runtimes()).toContain("crun");
      expect(JSON.parse(await readFile(config, "utf8"))).toMatchObject({
        "log-level": "warn",
        runtimes: { crun: { path: expect.stringMatching(/\/crun$/) } },
      });
      // Still the same engine: reloaded, not restarted.
      expect((await readFile(pidFile, "utf8")).trim()).toBe(String(dockerd.pid));
      expect((await pai(["doctor"], env)).stdout).toMatch(/^OK runtime: crun registered/m);
    } finally {
      if (dockerd !== undefined) {
        dockerd.kill("SIGTERM");
        await dockerd;
      }
      await rm(folder, { recursive: true, force: true });
    }
  }, 120_000);

  it("engine setup without an engine writes crun into daemon.json for the engine to come, and fails", async () => {
    // What scripts/docker-engine does before it starts an engine: the configuration is ready when it starts.
    const folder = await mkdtemp(join(tmpdir(), "pai-engine-setup-"));
    try {
      const config = join(folder, "daemon.json");
      const env = { DOCKER_HOST: "unix:///nonexistent.sock" };
      const args = ["engine", "setup", "--config", config, "--pid-file", join(folder, "docker.pid")];
      const { exitCode, stdout } = await pai(args, env);
      expect(exitCode).toBe(1);
      expect(stdout).toMatch(/^FAIL engine: no engine answers at unix:\/\/\/nonexistent\.sock/m);
      expect(stdout).toMatch(
        new RegExp(
          `^FAIL crun: added runtime crun \\(\\S+\\) to ${config}, and no engine answers to register it`,
          "m",
        ),
      );
      expect(stdout).toMatch(/^engine setup: 2 step\(s\) not in place$/m);
      const written = JSON.parse(await readFile(config, "utf8"));
      expect(written.runtimes.crun.path).toMatch(/\/crun$/);
      // Run again: the file stays as it is.
      const { mtimeMs } = await stat(config);
      expect((await pai(args, env)).stdout).toMatch(
        new RegExp(`^FAIL crun: runtime crun is in ${config}, and no`, "m"),
      );
      expect((await stat(config)).mtimeMs).toBe(mtimeMs);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it("engine setup as a user who is not root changes nothing and says what needs root", async () => {
    const folder = await mkdtemp(join(tmpdir(), "pai-engine-setup-"));
    try {
      const config = join(folder, "daemon.json");
      const result = await execa(
        "runuser",
        ["-u", "nobody", "--", process.execPath, main, "engine", "setup", "--config", config],
        { env: { DOCKER_HOST: "unix:///nonexistent.sock" }, reject: false, stdin: "ignore" },
      );
      expect(result.exitCode).toBe(1);
      expect(result.stdout).toMatch(
        /^FAIL crun: .*registering it in .* needs root\. Fix: run `sudo npx pai engine setup`$/m,
      );
      await expect(stat(config)).rejects.toThrow(/ENOENT/);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});
