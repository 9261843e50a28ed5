// What a case file observed, appended as JSON lines to PAI_CASE_LOG for the test that started the run.
import { appendFileSync } from "node:fs";
import { threadId } from "node:worker_threads";
import { createDockerDriver, poolLabels } from "@pai/pool";
import type { SandboxFacade } from "@pai/sandbox";

export const caseDriver = createDockerDriver();

export interface CaseRecord {
  test: string;
  containerId: string;
  poolId: string;
  worker: string;
}

/** Records the sandbox `test` got, with its pool id (from the engine) and the worker it ran in. */
export async function record(test: string, sandbox: SandboxFacade): Promise<CaseRecord> {
  const { id } = await sandbox.info();
  const { labels } = await caseDriver.inspect(id);
  const entry = {
    test,
    containerId: id,
    poolId: labels[poolLabels.pool] ?? "",
    worker: `${process.pid}/${threadId}`,
  };
  const log = process.env.PAI_CASE_LOG;
  if (!log) throw new Error("PAI_CASE_LOG is not set");
  appendFileSync(log, `${JSON.stringify(entry)}\n`);
  return entry;
}

/** True while the engine still has the container. */
export async function exists(containerId: string): Promise<boolean> {
  return caseDriver.inspect(containerId).then(
    () => true,
    (error: { code?: string }) => {
      if (error.code === "NOT_FOUND") return false;
      throw error;
    },
  );
}
