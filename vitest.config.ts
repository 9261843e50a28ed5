import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["**/*.test.ts", "**/*.test.tsx"],
    exclude: ["**/node_modules/**", "**/dist/**"],
    typecheck: { enabled: true, include: ["**/*.test-d.ts", "**/*.test-d.tsx"], tsconfig: "./tsconfig.json" },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // The run's sandbox pool for `paiSandboxFixture` (examples/python-project, tests/sandbox-vitest).
    globalSetup: ["@pai/sandbox/vitest/setup"],
  },
});
