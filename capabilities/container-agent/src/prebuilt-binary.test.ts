// The native programs as the package ships them (built by native/build.sh into prebuilt/): read from disk, their
// ELF headers checked byte by byte.

import { copyFile, mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import {
  findPrebuiltBinary,
  nodeArchitecture,
  PREBUILT_ARCHITECTURES,
  type PrebuiltProgram,
  prebuiltBinaryPath,
} from "./prebuilt-binary.ts";

const programs: PrebuiltProgram[] = ["pai-agent", "pai-egress-relay", "pai-splice", "pai-port-connect"];
/** ELF `e_machine` of each architecture. */
const ELF_MACHINE = { x64: 62, arm64: 183 } as const;
const PT_INTERP = 3;

/** What an ELF file's header says: its class, byte order, type, machine, and whether it asks for an interpreter. */
function elfHeader(file: Buffer) {
  expect(file.subarray(0, 4)).toEqual(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
  const phoff = Number(file.readBigUInt64LE(32));
  const phentsize = file.readUInt16LE(54);
  const phnum = file.readUInt16LE(56);
  const segments = Array.from({ length: phnum }, (_, index) => file.readUInt32LE(phoff + index * phentsize));
  return {
    class: file[4] === 2 ? "ELF64" : "other",
    byteOrder: file[5] === 1 ? "little-endian" : "other",
    type: file.readUInt16LE(16),
    machine: file.readUInt16LE(18),
    interpreter: segments.includes(PT_INTERP),
  };
}

describe("the prebuilt native programs", () => {
  it.each(
    PREBUILT_ARCHITECTURES.flatMap((architecture) => programs.map((program) => ({ architecture, program }))),
  )(
    "ships $program for linux-$architecture as a static ELF executable of that machine",
    async ({ architecture, program }) => {
      const header = elfHeader(await readFile(prebuiltBinaryPath(program, architecture)));
      expect(header).toEqual({
        class: "ELF64",
        byteOrder: "little-endian",
        type: expect.toBeOneOf([2, 3]), // ET_EXEC, or ET_DYN for a static PIE
        machine: ELF_MACHINE[architecture],
        interpreter: false, // no dynamic loader, no libc needed in the image
      });
    },
  );

  it("finds this machine's programs, executable", async () => {
    for (const program of programs) {
      await expect(findPrebuiltBinary({ program, architecture: process.arch })).resolves.toBe(
        prebuiltBinaryPath(program, process.arch as "x64" | "arm64"),
      );
    }
  });

  it("names the platform, the architecture and the fix for a binary it does not ship", async () => {
    await expect(findPrebuiltBinary({ program: "pai-agent", architecture: "riscv64" })).rejects.toMatchObject(
      {
        code: "PREBUILT_BINARY_MISSING",
        message: expect.stringMatching(
          /ships no pai-agent for linux-riscv64: .*for linux-x64 and linux-arm64 only/,
        ),
        details: { program: "pai-agent", platform: "linux", architecture: "riscv64" },
      },
    );
    await expect(
      findPrebuiltBinary({ program: "pai-egress-relay", platform: "darwin", architecture: "arm64" }),
    ).rejects.toMatchObject({
      code: "PREBUILT_BINARY_MISSING",
      message: expect.stringContaining("ships no pai-egress-relay for darwin-arm64"),
    });
  });

  it("names the fix when the package was packed without its native build", async () => {
    // A copy of this module in a package folder that has no prebuilt/.
    const unbuilt = await mkdtemp(join(tmpdir(), "pai-unbuilt-agent-"));
    try {
      await mkdir(join(unbuilt, "src"));
      for (const file of ["prebuilt-binary.ts", "container-agent-error.ts"]) {
        await copyFile(fileURLToPath(new URL(file, import.meta.url)), join(unbuilt, "src", file));
      }
      const copy: typeof import("./prebuilt-binary.ts") = await import(
        pathToFileURL(join(unbuilt, "src/prebuilt-binary.ts")).href
      );
      await expect(
        copy.findPrebuiltBinary({ program: "pai-agent", architecture: "arm64" }),
      ).rejects.toMatchObject({
        code: "PREBUILT_BINARY_MISSING",
        message: expect.stringMatching(
          /ships no pai-agent for linux-arm64 \(.*\/prebuilt\/linux-arm64\/pai-agent is missing\): .*native\/build\.sh/,
        ),
        details: {
          program: "pai-agent",
          architecture: "arm64",
          path: join(unbuilt, "prebuilt/linux-arm64/pai-agent"),
        },
      });
    } finally {
      await rm(unbuilt, { recursive: true, force: true });
    }
  });

  it("names an engine's machine as Node does", () => {
    expect(["x86_64", "amd64", "aarch64", "arm64", "s390x"].map(nodeArchitecture)).toEqual([
      "x64",
      "x64",
      "arm64",
      "arm64",
      "s390x",
    ]);
  });
});
