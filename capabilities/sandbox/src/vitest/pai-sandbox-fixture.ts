import { inject, type TestContext } from "vitest";
import { bindSandboxFacade } from "../bind-sandbox-facade.ts";
import { SandboxError } from "../sandbox-error.ts";
import type { SandboxFacade } from "../sandbox-facade.ts";
import { acquirePooledSandbox } from "./acquire-pooled-sandbox.ts";
import type { PaiSandboxFixtureOptions } from "./fixture-options.ts";
import { SANDBOX_POOL_KEY } from "./sandbox-pool-key.ts";

/**
 * A Vitest fixture that gives each test a fresh, hardened sandbox from the run's warm pool — the facade tools
 * get from `ctx.capabilities.sandbox` — and removes it when the test ends, whether it passed, failed or timed
 * out. Every command and file operation is also aborted by the test's own signal (a timeout kills what runs).
 *
 * The pool belongs to the run, not to a file or worker: add `@pai/sandbox/vitest/setup` to `globalSetup`, and
 * every test file with the same options shares it, in worker threads or forks alike.
 *
 * @example
 * // vitest.config.ts: test: { globalSetup: ["@pai/sandbox/vitest/setup"] }
 * import { test as base, expect } from "vitest";
 * import { paiSandboxFixture } from "@pai/sandbox/vitest";
 *
 * const test = base.extend({ sandbox: paiSandboxFixture({ pool: { min: 2 } }) });
 *
 * test("runs Python", async ({ sandbox }) => {
 *   const { stdout } = await sandbox.runCommand({ command: "python3 -c 'print(6 * 7)'" });
 *   expect(stdout).toBe("42\n");
 * });
 */
export function paiSandboxFixture(
  options: PaiSandboxFixtureOptions = {},
): (context: TestContext, use: (sandbox: SandboxFacade) => Promise<void>) => Promise<void> {
  return async ({ signal }, use) => {
    const address = inject(SANDBOX_POOL_KEY);
    if (!address) {
      throw new SandboxError(
        "CAPABILITY_UNAVAILABLE",
        'paiSandboxFixture needs the run\'s sandbox pool: add globalSetup: ["@pai/sandbox/vitest/setup"] to the Vitest config',
      );
    }
    const sandbox = await acquirePooledSandbox({ address, options, signal });
    try {
      await use(bindSandboxFacade(sandbox.facade, signal));
    } finally {
      await sandbox.release();
    }
  };
}
