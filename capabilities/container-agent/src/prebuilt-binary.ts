import { access, constants } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { ContainerAgentError } from "./container-agent-error.ts";

/**
 * The architectures this package ships its native programs for, in Node's names (`process.arch`): `x64` is
 * x86_64, `arm64` is aarch64. Each one's binaries are in `prebuilt/linux-<architecture>/`, built from
 * `native/*.c` when the package is packed (`native/build.sh`); nothing is compiled at run time.
 */
export const PREBUILT_ARCHITECTURES = ["x64", "arm64"] as const;

/** One of {@link PREBUILT_ARCHITECTURES}. */
export type PrebuiltArchitecture = (typeof PREBUILT_ARCHITECTURES)[number];

/**
 * The package's native programs: `pai-agent` runs in containers (on the engine's architecture); `pai-egress-relay`,
 * `pai-splice` and `pai-port-connect` on this machine (`process.arch`).
 */
export type PrebuiltProgram = "pai-agent" | "pai-egress-relay" | "pai-splice" | "pai-port-connect";

const prebuiltDirectory = new URL("../prebuilt/", import.meta.url);

/** What to do about a package without its prebuilt binaries. Internal. */
export const PREBUILT_FIX =
  "the package was packed without its native build. In the PAI repository run " +
  "capabilities/container-agent/native/build.sh (scripts/setup does); otherwise install a @pai/container-agent that ships " +
  "prebuilt/";

/**
 * Node's name for a machine architecture as an engine or `uname -m` says it (`x86_64`/`amd64` → `x64`,
 * `aarch64`/`arm64` → `arm64`); any other name is returned as it is.
 */
export function nodeArchitecture(machine: string): string {
  switch (machine) {
    case "x86_64":
    case "amd64":
      return "x64";
    case "aarch64":
    case "arm64":
      return "arm64";
    default:
      return machine;
  }
}

function isPrebuiltArchitecture(architecture: string): architecture is PrebuiltArchitecture {
  return (PREBUILT_ARCHITECTURES as readonly string[]).includes(architecture);
}

/** Where this package keeps `program` for linux `architecture` (a {@link PrebuiltArchitecture}); it may be missing. */
export function prebuiltBinaryPath(program: PrebuiltProgram, architecture: PrebuiltArchitecture): string {
  return fileURLToPath(new URL(`linux-${architecture}/${program}`, prebuiltDirectory));
}

/**
 * The path of this package's `program` for `architecture`, checked to be there and executable. Nothing is built:
 * a package without it cannot run it.
 *
 * @throws ContainerAgentError `PREBUILT_BINARY_MISSING` (`details`: `program`, `platform`, `architecture`, `path`)
 *   when the package ships no such binary: another platform than linux, an architecture PAI does not build
 *   for, or a package packed without running `native/build.sh`
 * @example
 * const relay = await findPrebuiltBinary({ program: "pai-egress-relay", architecture: process.arch });
 */
export async function findPrebuiltBinary(options: {
  program: PrebuiltProgram;
  /** In Node's names (`process.arch`); see {@link nodeArchitecture} for an engine's. */
  architecture: string;
  /** @default "linux" */
  platform?: string | undefined;
}): Promise<string> {
  const { program, architecture, platform = "linux" } = options;
  const details = { program, platform, architecture };
  if (platform !== "linux" || !isPrebuiltArchitecture(architecture)) {
    throw new ContainerAgentError(
      "PREBUILT_BINARY_MISSING",
      `this @pai/container-agent ships no ${program} for ${platform}-${architecture}: PAI builds its native ` +
        `programs for ${PREBUILT_ARCHITECTURES.map((name) => `linux-${name}`).join(" and ")} only`,
      { details },
    );
  }
  const path = prebuiltBinaryPath(program, architecture);
  try {
    await access(path, constants.X_OK);
  } catch (error) {
    throw new ContainerAgentError(
      "PREBUILT_BINARY_MISSING",
      `this @pai/container-agent ships no ${program} for linux-${architecture} (${path} is missing): ${PREBUILT_FIX}`,
      { cause: error, details: { ...details, path } },
    );
  }
  return path;
}
