// The agent volume on engines of either architecture: in-memory engines (the pool's fake driver) that say their
// machine as Docker does, and the real prebuilt binaries. The real engine's volume is exercised by every sandbox and
// browser test under tests/.

import { readFile } from "node:fs/promises";
import type { ContainerDriver } from "@pai/pool";
import { createFakeDriver } from "@pai/pool/testing";
import tar from "tar-stream";
import { describe, expect, it } from "vitest";
import { AGENT_DIRECTORY, agentVolumeMount, prepareAgentVolume } from "./agent-volume.ts";
import { prebuiltBinaryPath } from "./prebuilt-binary.ts";

/** The files of a tar archive, by name, with their modes. */
async function untar(archive: Buffer): Promise<Map<string, { mode: number; content: Buffer }>> {
  const files = new Map<string, { mode: number; content: Buffer }>();
  const extract = tar.extract();
  extract.end(archive);
  for await (const entry of extract) {
    const chunks: Buffer[] = [];
    for await (const chunk of entry) chunks.push(chunk as Buffer);
    files.set(entry.header.name, { mode: entry.header.mode ?? 0, content: Buffer.concat(chunks) });
  }
  return files;
}

/** An engine on `architecture` (as Docker's /info says it) and the archives put into its containers. */
function engineOn(architecture: string) {
  const fake = createFakeDriver({ host: { architecture } });
  const put: Array<{ path: string; archive: Buffer }> = [];
  const driver: ContainerDriver = {
    ...fake,
    async putArchive(id, path, archive, options) {
      put.push({ path, archive: Buffer.from(archive as Uint8Array) });
      await fake.putArchive(id, path, archive, options);
    },
  };
  return { fake, driver, put };
}

describe("prepareAgentVolume", () => {
  it("fills each engine's volume with the agent of that engine's machine, under one name for all", async () => {
    const mount = await agentVolumeMount();
    expect(mount).toEqual({
      name: expect.stringMatching(/^pai-agent-[0-9a-f]{12}$/),
      target: AGENT_DIRECTORY,
    });
    for (const [machine, architecture] of [
      ["x86_64", "x64"],
      ["aarch64", "arm64"],
    ] as const) {
      const { fake, driver, put } = engineOn(machine);
      expect(await prepareAgentVolume({ driver, image: "fake/any" })).toEqual(mount);
      expect(put.map(({ path }) => path)).toEqual([AGENT_DIRECTORY]);
      const files = await untar(put[0]!.archive);
      expect([...files.keys()]).toEqual(["pai-agent"]);
      expect(files.get("pai-agent")!.mode).toBe(0o755);
      expect(
        files.get("pai-agent")!.content.equals(await readFile(prebuiltBinaryPath("pai-agent", architecture))),
      ).toBe(true);
      // The container that filled it is gone; the volume (named in the spec) is what stays.
      expect(fake.containers.size).toBe(0);
      expect(fake.calls.info).toBe(1);
    }
  });

  it("refuses an engine whose machine it ships no agent for, naming it, before creating anything", async () => {
    const { fake, driver } = engineOn("s390x");
    await expect(prepareAgentVolume({ driver, image: "fake/any" })).rejects.toMatchObject({
      code: "PREBUILT_BINARY_MISSING",
      message: expect.stringMatching(
        /^the engine runs on s390x: this @pai\/container-agent ships no pai-agent for linux-s390x/,
      ),
      details: { program: "pai-agent", architecture: "s390x", engineArchitecture: "s390x" },
    });
    expect(fake.calls.create).toBe(0);
  });
});
