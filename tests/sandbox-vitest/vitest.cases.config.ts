// The Vitest config of the runs the fixture's tests start as child processes: the fixture's global setup (left
// out with PAI_CASE_SETUP=none), the case files named by PAI_CASES, threads or forks from PAI_CASE_POOL, two
// workers so files run side by side.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    root: import.meta.dirname,
    include: (process.env.PAI_CASES ?? "cases/*.case.ts").split(","),
    globalSetup: process.env.PAI_CASE_SETUP === "none" ? [] : ["@pai/sandbox/vitest/setup"],
    pool: process.env.PAI_CASE_POOL === "forks" ? "forks" : "threads",
    maxWorkers: 2,
    testTimeout: 60_000,
  },
});
