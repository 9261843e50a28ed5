// `@pai/sandbox/testing`: createTestSandbox on testcontainers, cleaned up by `await using`, and the facade
// presented as the AI SDK's SandboxSession.
import { resolveDefaultSandboxImage, toSandboxSession } from "@pai/sandbox";
import { createTestSandbox } from "@pai/sandbox/testing";
import { describe, expect, it } from "vitest";
import { docker, dockerOptedOut, sandboxImage, testDriver } from "./docker-helpers.ts";

async function gone(containerId: string): Promise<boolean> {
  return testDriver.inspect(containerId).then(
    () => false,
    (error: { code?: string }) => error.code === "NOT_FOUND",
  );
}

describe.skipIf(dockerOptedOut)("createTestSandbox", () => {
  it("starts a hardened sandbox and removes it at the end of the `await using` block", async () => {
    let containerId: string;
    {
      await using box = await createTestSandbox({ image: sandboxImage });
      containerId = box.containerId;
      await box.writeFiles([{ path: "main.py", content: "print(6 * 7)" }]);
      expect(await box.runCommand({ command: "python3 main.py" })).toMatchObject({
        exitCode: 0,
        stdout: "42\n",
      });
      const inside = await box.runCommand({
        command:
          "id -u; ls /sys/class/net; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; cat /proc/1/comm",
      });
      expect(inside.stdout.split("\n").map((line) => line.replace(/\s+/g, " "))).toEqual([
        "1000",
        "lo",
        "CapEff: 0000000000000000",
        "NoNewPrivs: 1",
        "docker-init",
        "",
      ]);
      expect((await box.runCommand({ command: "touch /etc/x" })).exitCode).not.toBe(0);
      expect(await docker("inspect", "-f", "{{.HostConfig.PidsLimit}}", containerId)).toBe("256");
      // A command cannot stop its sandbox: the main process is root's.
      await box.runCommand({ command: "kill -9 -1; kill -9 1; pkill -9 sleep" });
      expect(await box.runCommand({ command: "python3 main.py" })).toMatchObject({ stdout: "42\n" });
    }
    expect(await gone(containerId)).toBe(true);
  });

  it("runs PAI's own sandbox image when given none (there on this engine: nothing to build)", async () => {
    await using box = await createTestSandbox();
    expect((await box.info()).image).toBe(await resolveDefaultSandboxImage());
    expect((await box.runCommand({ command: "id -u" })).stdout).toBe("1000\n");
  });

  it("works as an AI SDK SandboxSession", async () => {
    await using box = await createTestSandbox({ image: sandboxImage });
    const session = toSandboxSession(box);
    expect(session.description).toContain("/workspace");
    await session.writeTextFile({ path: "notes/a.txt", content: "one\ntwo\nthree\n" });
    expect(await session.readTextFile({ path: "notes/a.txt", startLine: 2, endLine: 2 })).toBe("two\n");
    expect(await session.stat({ path: "notes" })).toMatchObject({ type: "directory" });
    expect(await session.listDirectory({ path: "notes" })).toEqual([{ name: "a.txt", type: "file" }]);
    expect(await session.run({ command: "wc -l < a.txt", workingDirectory: "notes" })).toEqual({
      exitCode: 0,
      stdout: "3\n",
      stderr: "",
    });
    const cat = await session.spawn({ command: "cat", stdin: true });
    const writer = cat.stdin.getWriter();
    await writer.write(new TextEncoder().encode("piped"));
    await writer.close();
    let out = "";
    for await (const chunk of cat.stdout) out += new TextDecoder().decode(chunk);
    expect(out).toBe("piped");
    expect(await cat.wait()).toEqual({ exitCode: 0 });
    expect(await session.deleteFile({ path: "notes/a.txt" })).toBe(true);
    expect(await session.deleteFile({ path: "notes/a.txt" })).toBe(false);
    await expect(session.readTextFile({ path: "/etc/passwd" })).rejects.toMatchObject({
      code: "PATH_OUTSIDE_WORKSPACE",
    });
  });
});
