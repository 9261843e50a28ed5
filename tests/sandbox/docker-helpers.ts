// Shared helpers of the Docker-backed sandbox tests. They use the real engine and the real `pai/sandbox` image and
// fail (never skip) when either is missing; PAI_DOCKER_TESTS=0 opts out on a machine without Docker (ignored
// under CI=true).

import { randomBytes } from "node:crypto";
import { createDockerDriver, poolLabels } from "@pai/pool";
import { execa } from "execa";

/** The image under test. */
export const sandboxImage = process.env.PAI_SANDBOX_IMAGE ?? "pai/sandbox:latest";

/** True when Docker tests are switched off (never under CI). */
export const dockerOptedOut = process.env.PAI_DOCKER_TESTS === "0" && process.env.CI !== "true";

/** One driver for the helpers. */
export const testDriver = createDockerDriver();

/** A pool id no other test (or test run) uses, so reaping never touches another test's containers. */
export function uniquePoolId(name: string): string {
  return `test-sandbox-${name}-${randomBytes(3).toString("hex")}`;
}

/** Containers (any state) labelled with pool `poolId`. */
export async function poolContainers(poolId: string): Promise<string[]> {
  const rows = await testDriver.list({ labels: { [poolLabels.pool]: poolId } });
  return rows.map((row) => row.id).sort();
}

/** Runs the docker CLI. */
export async function docker(...args: string[]): Promise<string> {
  const { stdout } = await execa("docker", args, { timeout: 60_000 });
  return stdout.trim();
}

/** Polls `condition` until it holds. */
export async function waitFor(
  condition: () => Promise<boolean> | boolean,
  what = "condition",
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Force-removes every container of `poolId` (a test's last line of cleanup). */
export async function removePoolContainers(poolId: string): Promise<void> {
  for (const id of await poolContainers(poolId)) await testDriver.remove(id).catch(() => undefined);
}

/** A ustar archive of regular files, written by hand (names are taken as they are, `..` included). */
export function tarOf(files: Array<{ name: string; content: string }>): Buffer {
  const blocks: Buffer[] = [];
  for (const file of files) {
    const content = Buffer.from(file.content);
    const header = Buffer.alloc(512);
    const octal = (value: number, length: number) => `${value.toString(8).padStart(length - 1, "0")}\0`;
    header.write(file.name, 0, 100, "utf8");
    header.write(octal(0o644, 8), 100, "ascii");
    header.write(octal(1000, 8), 108, "ascii");
    header.write(octal(1000, 8), 116, "ascii");
    header.write(octal(content.length, 12), 124, "ascii");
    header.write(octal(Math.floor(Date.now() / 1000), 12), 136, "ascii");
    header.write("        ", 148, "ascii");
    header.write("0", 156, "ascii");
    header.write("ustar\0", 257, "ascii");
    header.write("00", 263, "ascii");
    let sum = 0;
    for (const byte of header) sum += byte;
    header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "ascii");
    blocks.push(header, content, Buffer.alloc((512 - (content.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

/** `type name` per entry of a tar stream, as the host's GNU tar lists it (`-` file, `d` directory, `l` symlink). */
export async function listTar(stream: NodeJS.ReadableStream): Promise<string[]> {
  const child = execa("tar", ["-tvf", "-"], { stdin: "pipe", stderr: "inherit" });
  stream.pipe(child.stdin);
  const { stdout } = await child;
  return stdout
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => {
      const name = line
        .split(/\s+/)
        .slice(5)
        .join(" ")
        .replace(/ -> .*$/, "")
        .replace(/\/$/, "");
      return `${line[0]} ${name}`;
    })
    .sort();
}
