import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["*.test.ts"],
    // Owns the run's warm sandbox pool: every test file using `paiSandboxFixture` shares it.
    globalSetup: ["@pai/sandbox/vitest/setup"],
    testTimeout: 60_000,
  },
});
