import { randomBytes } from "node:crypto";
import { createDockerDriver, poolLabels } from "@pai/pool";
import { resolveDefaultSandboxImage } from "@pai/sandbox";

/** The driver every sandbox benchmark uses. */
export const benchDriver = createDockerDriver();

/** Marks every container a benchmark run creates, so the run removes them all at the end. */
export const benchRunId = `bench-${randomBytes(4).toString("hex")}`;

const poolIds = new Set<string>();

/** A pool id for one benchmark, remembered for the final cleanup. */
export function benchPoolId(name: string): string {
  const id = `${benchRunId}-${name}`;
  poolIds.add(id);
  return id;
}

/** The sandbox image under test. */
export function benchImage(): Promise<string> {
  return process.env.PAI_SANDBOX_IMAGE
    ? Promise.resolve(process.env.PAI_SANDBOX_IMAGE)
    : resolveDefaultSandboxImage();
}

/** Labels of containers a benchmark creates by hand (outside a pool). */
export const benchLabels = { [poolLabels.managed]: "true", [poolLabels.pool]: `${benchRunId}-raw` };

/** Force-removes whatever a benchmark left behind; returns how many it found. */
export async function removeBenchContainers(): Promise<number> {
  let found = 0;
  for (const pool of [...poolIds, `${benchRunId}-raw`]) {
    const rows = await benchDriver.list({ labels: { [poolLabels.pool]: pool } });
    found += rows.length;
    await Promise.all(rows.map((row) => benchDriver.remove(row.id).catch(() => undefined)));
  }
  return found;
}
