import type { TestProject } from "vitest/node";
import type { PaiSandboxPoolOptions } from "./fixture-options.ts";
import { SANDBOX_POOL_KEY } from "./sandbox-pool-key.ts";
import { createSandboxPoolServer } from "./sandbox-pool-server.ts";

/** Options of {@link paiSandboxSetup}. */
export interface PaiSandboxSetupOptions {
  /**
   * Fixture options whose pools are warmed when the run starts, so even the first test finds a sandbox ready.
   * Without it a pool is made on the first test that asks. @default []
   */
  warm?: readonly PaiSandboxPoolOptions[];
  /** Where runs keep heartbeat records. @default `$PAI_SANDBOX_STATE_DIR`, else `<tmpdir>/pai-sandbox-vitest-<uid>` */
  stateDirectory?: string;
}

/**
 * A Vitest global setup that owns the run's sandbox pools: it serves `paiSandboxFixture` in every worker, frees
 * what dead runs left on the engine, and removes every sandbox of the run when it ends. The module's default
 * export is `paiSandboxSetup()`; export your own to warm pools at start.
 *
 * @example
 * // vitest.sandbox-setup.ts, listed in `globalSetup`
 * import { paiSandboxSetup } from "@pai/sandbox/vitest/setup";
 * export default paiSandboxSetup({ warm: [{ pool: { min: 2 } }] });
 */
export function paiSandboxSetup(options: PaiSandboxSetupOptions = {}) {
  return async function setup(project: TestProject): Promise<() => Promise<void>> {
    const server = await createSandboxPoolServer({
      ...(options.warm ? { warm: options.warm } : {}),
      ...(options.stateDirectory ? { stateDirectory: options.stateDirectory } : {}),
    });
    project.provide(SANDBOX_POOL_KEY, server.address);
    return () => server.close();
  };
}

export default paiSandboxSetup();
