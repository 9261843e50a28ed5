// Code contexts (`runCode` & co.) against a real sandbox from `dockerSandbox()`: IPython with rich results, Node
// contexts for JavaScript and TypeScript, interrupts, restarts, a wake after hibernation, and the attack set run
// through a cell.

import type { ProvisionedResource } from "@pai/core";
import {
  createDockerExecExecutor,
  createSandboxFacade,
  type DockerSandboxBinding,
  dockerSandbox,
  SandboxError,
  type SandboxFacade,
} from "@pai/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  dockerOptedOut,
  poolContainers,
  removePoolContainers,
  sandboxImage,
  testDriver,
  uniquePoolId,
  waitFor,
} from "./docker-helpers.ts";

const poolId = uniquePoolId("interpreter");
let binding: DockerSandboxBinding;
let resource: ProvisionedResource<SandboxFacade>;
let box: SandboxFacade;

function mainText(result: { results: Array<{ isMainResult: boolean; text?: string }> }): string | undefined {
  return result.results.find((entry) => entry.isMainResult)?.text;
}

describe.skipIf(dockerOptedOut)("code contexts in a sandbox", () => {
  beforeAll(async () => {
    binding = dockerSandbox({ image: sandboxImage, poolId, pool: { min: 0, max: 2, hibernateAfterMs: 300 } });
    await binding.start?.();
    const signal = new AbortController().signal;
    resource = await binding.provision({ leaseKey: "thread:interpreter", lifetime: "thread", signal });
    // in use: not hibernated until the wake test lets it idle
    await resource.hibernation?.wake(signal);
    box = resource.facade;
  }, 120_000);

  afterAll(async () => {
    try {
      await resource?.release();
      await binding?.close();
      expect(await poolContainers(poolId)).toEqual([]);
    } finally {
      await removePoolContainers(poolId);
    }
  });

  it("keeps a default Python context's state between calls, and streams what it prints", async () => {
    const printed: string[] = [];
    const first = await box.runCode("x = 2\nprint('set', x)", { onStdout: (chunk) => printed.push(chunk) });
    expect(first).toMatchObject({
      terminationReason: "completed",
      results: [],
      logs: { stdout: ["set 2\n"] },
    });
    expect(first.error).toBeUndefined();
    expect(printed.join("")).toBe("set 2\n");
    const second = await box.runCode("x * 21");
    expect(mainText(second)).toBe("42");
    expect(second.executionCount).toBe(first.executionCount + 1);
    expect(second.context).toMatchObject({ id: "default-python", language: "python", cwd: "/workspace" });
  });

  it("returns every representation the code displays", async () => {
    const { results, error } = await box.runCode(
      [
        "import io",
        "from IPython.display import display, HTML, Markdown, SVG, JSON, Latex, Image",
        "import matplotlib.pyplot as plt",
        "display(HTML('<b>bold</b>'), Markdown('*it*'), Latex('$x^2$'), JSON({'a': [1, 2]}))",
        'display(SVG(\'<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"></svg>\'))',
        "fig = plt.figure(figsize=(1, 1)); plt.plot([1, 2])",
        "buffer = io.BytesIO(); fig.savefig(buffer, format='jpeg'); plt.close(fig)",
        "display(Image(data=buffer.getvalue(), format='jpeg'))",
        "plt.figure(figsize=(2, 2)); plt.bar(['a', 'b'], [3, 5])  # left open: shown at the end of the cell",
        "'the end'",
      ].join("\n"),
    );
    expect(error).toBeUndefined();
    const find = (key: string) =>
      results.find((result) => key in result) as Record<string, unknown> | undefined;
    expect(find("html")?.html).toBe("<b>bold</b>");
    expect(find("markdown")?.markdown).toBe("*it*");
    expect(find("latex")?.latex).toBe("$x^2$");
    expect(find("json")?.json).toEqual({ a: [1, 2] });
    expect(find("svg")?.svg).toContain("<svg");
    const jpeg = Buffer.from(String(find("jpeg")?.jpeg), "base64");
    expect([...jpeg.subarray(0, 3)]).toEqual([0xff, 0xd8, 0xff]);
    const png = Buffer.from(String(find("png")?.png), "base64");
    expect(png.subarray(1, 4).toString()).toBe("PNG");
    expect(results.find((result) => result.isMainResult)).toMatchObject({ text: "'the end'" });
    expect(results.filter((result) => result.isMainResult)).toHaveLength(1);

    const frame = await box.runCode(
      "import pandas as pd\npd.DataFrame({'city': ['Oslo', 'Lima'], 'n': [1, 2]})",
    );
    expect(frame.results[0]).toMatchObject({ isMainResult: true });
    expect(frame.results[0]?.html).toContain("<table");
    expect(frame.results[0]?.html).toContain("Lima");
    expect(frame.results[0]?.text).toMatch(/city\s+n\s*\n0\s+Oslo\s+1/);
  });

  it("reports an exception as an error with its name, value and traceback; magics and shell escapes work", async () => {
    const failed = await box.runCode("def f():\n    return 1 / 0\nf()");
    expect(failed.terminationReason).toBe("completed");
    expect(failed.error).toMatchObject({ name: "ZeroDivisionError", value: "division by zero" });
    expect(failed.error?.traceback).toContain("----> 3 f()");
    expect(failed.error?.traceback).not.toContain("\u001b[");
    const magic = await box.runCode("%env GREETING=hi\n!echo $GREETING from a shell");
    expect(magic.error).toBeUndefined();
    expect(magic.logs.stdout.join("")).toContain("hi from a shell");
  });

  it("interrupts a cell at its timeout and keeps the context's state", async () => {
    await box.runCode("kept = 'still here'");
    const stuck = await box.runCode("import time\nwhile True:\n    time.sleep(0.01)", { timeoutMs: 500 });
    expect(stuck.terminationReason).toBe("timeout");
    expect(stuck.error?.name).toBe("KeyboardInterrupt");
    const busy = await box.runCode("while True:\n    pass", { timeoutMs: 500 });
    expect(busy).toMatchObject({ terminationReason: "timeout", error: { name: "KeyboardInterrupt" } });
    const after = await box.runCode("kept");
    expect(after.restarted).toBeUndefined();
    expect(mainText(after)).toBe("'still here'");
  });

  it("an abort interrupts the cell too; an aborted signal runs nothing", async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const aborted = await box.runCode("import time\ntime.sleep(30)", { signal: controller.signal });
    expect(aborted).toMatchObject({ terminationReason: "abort", error: { name: "KeyboardInterrupt" } });
    await expect(box.runCode("1", { signal: controller.signal })).rejects.toThrow();
  });

  it("keeps contexts apart, restarts one empty, lists and removes them", async () => {
    await expect(box.createCodeContext({ cwd: "missing" })).rejects.toSatisfy(
      (error) =>
        SandboxError.hasCode(error, "NOT_FOUND") && /\/workspace\/missing/.test((error as Error).message),
    );
    await box.writeFiles([{ path: "sub/.keep", content: "" }]);
    const a = await box.createCodeContext({ language: "python", env: { WHO: "a" } });
    const b = await box.createCodeContext({ cwd: "sub" });
    expect(a).toMatchObject({ language: "python", cwd: "/workspace" });
    expect(b).toMatchObject({ language: "python", cwd: "/workspace/sub" });
    await box.runCode("import os\nname = os.environ['WHO']", { context: a });
    const inB = await box.runCode("name", { context: b });
    expect(inB.error).toMatchObject({ name: "NameError" });
    expect(mainText(await box.runCode("name", { context: a.id }))).toBe("'a'");
    expect(mainText(await box.runCode("import os; os.getcwd()", { context: b }))).toBe("'/workspace/sub'");

    const ids = (await box.listCodeContexts()).map((context) => context.id);
    expect(ids).toEqual(expect.arrayContaining([a.id, b.id, "default-python"]));

    expect(await box.restartCodeContext(a)).toEqual(a);
    const emptied = await box.runCode("name", { context: a });
    expect(emptied.error?.name).toBe("NameError");
    expect(emptied.executionCount).toBe(1);

    expect(await box.removeCodeContext(a)).toBe(true);
    expect(await box.removeCodeContext(a)).toBe(false);
    await expect(box.runCode("1", { context: a })).rejects.toSatisfy((error) =>
      SandboxError.hasCode(error, "NOT_FOUND"),
    );
    await box.removeCodeContext(b);
    await expect(box.createCodeContext({ language: "ruby" as "python" })).rejects.toSatisfy((error) =>
      SandboxError.hasCode(error, "INVALID_ARGUMENT"),
    );
  });

  it("names what is missing when the image has no IPython", async () => {
    await box.writeFiles([
      { path: "no-ipython/IPython/__init__.py", content: "raise ImportError('No module named IPython')\n" },
    ]);
    const failure = await box
      .createCodeContext({ env: { PYTHONPATH: "/workspace/no-ipython" } })
      .catch((error: unknown) => error);
    expect(SandboxError.hasCode(failure, "INTERPRETER_UNAVAILABLE")).toBe(true);
    expect((failure as Error).message).toMatch(/IPython is not installed.*python3-ipython/);
    await box.removeFile("no-ipython", { recursive: true });
  });

  it("runs JavaScript with persistent declarations, top-level await and the last value as result", async () => {
    const logs: string[] = [];
    const first = await box.runCode("const base = 40;\nlet calls = 0;\nconsole.log('ready');", {
      language: "javascript",
      onStdout: (chunk) => logs.push(chunk),
    });
    expect(first.error).toBeUndefined();
    expect(logs.join("")).toBe("ready\n");
    const awaited = await box.runCode(
      "const extra = await new Promise((resolve) => setTimeout(() => resolve(2), 50));\ncalls += 1;\nbase + extra",
      { language: "javascript" },
    );
    expect(awaited.error).toBeUndefined();
    expect(mainText(awaited)).toBe("42");
    const object = await box.runCode("({ base, extra, calls })", { language: "javascript" });
    expect(object.results[0]).toMatchObject({
      text: "{ base: 40, extra: 2, calls: 1 }",
      json: { base: 40, extra: 2, calls: 1 },
    });
    const thrown = await box.runCode("null.x", { language: "javascript" });
    expect(thrown.error).toMatchObject({ name: "TypeError" });
    const spinning = await box.runCode("for (;;) {}", { language: "javascript", timeoutMs: 500 });
    expect(spinning.terminationReason).toBe("timeout");
    const waiting = await box.runCode("await new Promise(() => {})", {
      language: "javascript",
      timeoutMs: 500,
    });
    expect(waiting).toMatchObject({ terminationReason: "timeout", error: { name: "KeyboardInterrupt" } });
    expect(mainText(await box.runCode("base + calls", { language: "javascript" }))).toBe("41");
  });

  it("runs TypeScript with its types stripped on the host", async () => {
    const context = await box.createCodeContext({ language: "typescript" });
    await box.runCode(
      "interface Point { x: number; y: number }\nconst p: Point = { x: 3, y: 4 };\nenum Color { Red, Green }",
      { context },
    );
    const value = await box.runCode(
      "const norm = (q: Point): number => Math.hypot(q.x, q.y);\nawait Promise.resolve(norm(p) + Color.Green)",
      { context },
    );
    expect(value.error).toBeUndefined();
    expect(mainText(value)).toBe("6");
    const imported = await box.runCode(
      'import { type ParsedPath, join } from "node:path";\nimport * as os from "node:os";\nconst where: string = join("/a", "b");\n[where, os.platform()]',
      { context },
    );
    expect(imported.error).toBeUndefined();
    expect(imported.results[0]?.json).toEqual(["/a/b", "linux"]);
    const bad = await box.runCode("const broken: = 1", { context });
    expect(bad.error?.name).toBe("SyntaxError");
    await box.removeCodeContext(context);
  });

  it("a memory bomb in a cell kills only its context, which starts again, empty, on its next call", async () => {
    const context = await box.createCodeContext();
    await box.runCode("before = 1", { context });
    const bomb = await box.runCode("hog = []\nwhile True:\n    hog.append(bytearray(64 * 1024 ** 2))", {
      context,
      timeoutMs: 60_000,
    });
    expect(bomb).toMatchObject({ terminationReason: "context-exited", error: { name: "ContextExited" } });
    expect(bomb.error?.value).toContain("OOM");
    expect((await box.runCommand({ command: "echo fine" })).stdout).toBe("fine\n");
    const next = await box.runCode("before", { context });
    expect(next).toMatchObject({ restarted: true, error: { name: "NameError" } });
    expect(next.restartReason).toContain("OOM");
    expect((await box.runCode("1 + 1", { context })).restarted).toBeUndefined();
    await box.removeCodeContext(context);
  }, 90_000);

  it("a fork bomb in a cell is stopped at its timeout with its context; the sandbox stays usable", async () => {
    const context = await box.createCodeContext();
    const bomb = await box.runCode(
      "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
      {
        context,
        timeoutMs: 2_000,
        forceKillAfterMs: 1_000,
      },
    );
    expect(bomb.terminationReason).toBe("timeout");
    await waitFor(
      async () =>
        (await box.runCommand({ command: "echo fine" }).catch(() => undefined))?.stdout === "fine\n",
      "the sandbox to run commands again",
    );
    // The context's process group is killed again and again until it is empty, after the cell has answered: its
    // processes are gone within moments, leaving the default context's driver (and the grep's own shell).
    await waitFor(async () => {
      const ps = await box.runCommand({ command: "ps -eo args= | grep -c '^python3 -u -c' || true" });
      return Number(ps.stdout.trim()) <= 2;
    }, "the fork bomb's processes to be gone");
    const next = await box.runCode("2 + 2", { context });
    expect(next).toMatchObject({ restarted: true });
    expect(mainText(next)).toBe("4");
    await box.removeCodeContext(context);
  }, 90_000);

  it("keeps a cell's requests to itself (input() reads nothing) and caps the logs it keeps", async () => {
    const asked = await box.runCode("input('name? ')");
    expect(asked.error?.name).toBe("EOFError");
    const streamed: string[] = [];
    const loud = await box.runCode("print('x' * 5000)\nprint('y' * 5000)", {
      maxLogLength: 1000,
      onStdout: (chunk) => streamed.push(chunk),
    });
    expect(streamed.join("")).toBe(`${"x".repeat(5000)}\n${"y".repeat(5000)}\n`);
    const kept = loud.logs.stdout.join("");
    expect(kept.startsWith("x".repeat(1000))).toBe(true);
    expect(kept).toContain("…(9002 more characters not kept)");
    expect(mainText(await box.runCode("'still speaking'"))).toBe("'still speaking'");
  });

  it("a facade made anew over the running sandbox (a new connection) kills the drivers it cannot take over", async () => {
    const context = await box.createCodeContext();
    await box.runCode("here = 1", { context });
    const recorded = await box.runCommand({ command: `cat /tmp/.pai-code-contexts/${context.id}.json` });
    const { pid } = JSON.parse(recorded.stdout) as { pid: number };
    const { id: containerId, image } = await box.info();
    const executor = createDockerExecExecutor({ driver: testDriver, containerId });
    try {
      const other = createSandboxFacade({ executor, driver: testDriver, containerId, image });
      expect((await other.listCodeContexts()).map((entry) => entry.id)).toContain(context.id);
      const alive = await box.runCommand({
        command: `kill -0 ${pid} 2>/dev/null && echo alive || echo gone`,
      });
      expect(alive.stdout).toBe("gone\n");
      const next = await other.runCode("here", { context: context.id });
      expect(next).toMatchObject({ restarted: true, error: { name: "NameError" } });
      expect(next.restartReason).toMatch(/connected to this sandbox anew/);
      expect(await other.removeCodeContext(context.id)).toBe(true);
    } finally {
      await executor.close();
    }
    await box.removeCodeContext(context);
  });

  it("a context woken after hibernation is started again, empty, and says so", async () => {
    const signal = new AbortController().signal;
    await box.runCode("survivor = 1");
    const script = await box.createCodeContext({ language: "javascript" });
    await box.runCode("const kept = 1", { context: script });
    resource.hibernation?.idle();
    await waitFor(async () => binding.metrics()?.hibernated === 1, "hibernation");
    expect(await resource.hibernation?.wake(signal)).toBe("woken");
    const woken = resource.facade;
    expect((await woken.listCodeContexts()).map((context) => context.id)).toEqual(
      expect.arrayContaining(["default-python", script.id]),
    );
    const again = await woken.runCode("survivor");
    expect(again).toMatchObject({ restarted: true, error: { name: "NameError" }, executionCount: 1 });
    expect(again.restartReason).toMatch(/hibernated/);
    expect((await woken.runCode("typeof kept", { context: script })).restarted).toBe(true);
    expect((await woken.runCode("1")).restarted).toBeUndefined();
  }, 60_000);
});
