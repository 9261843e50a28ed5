import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["@pai/sandbox/vitest/setup"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
