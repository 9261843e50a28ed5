import type { SandboxPoolAddress } from "./sandbox-pool-server.ts";

/** The `provide`/`inject` key under which the global setup hands workers the pool's address. */
export const SANDBOX_POOL_KEY = "paiSandboxPool";

declare module "vitest" {
  export interface ProvidedContext {
    /** Where `paiSandboxFixture` reaches the run's sandbox pool (set by `@pai/sandbox/vitest/setup`). */
    [SANDBOX_POOL_KEY]: SandboxPoolAddress;
  }
}
