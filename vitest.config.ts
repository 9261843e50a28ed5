import { defineConfig } from "vitest/config";

// The repo runs the packages' sources: every `@pai/*` export has an `@pai/source` condition naming its `src/*.ts`
// (what is published points at `dist/` only). Vitest resolves with it in every environment, and so does every Node
// process a test starts (NODE_OPTIONS is inherited), so no test needs a build.
const source = { resolve: { conditions: ["@pai/source"] } };
const sourceCondition = "--conditions=@pai/source";
if (!process.env.NODE_OPTIONS?.includes(sourceCondition)) {
  process.env.NODE_OPTIONS = [process.env.NODE_OPTIONS, sourceCondition].filter(Boolean).join(" ");
}

/**
 * Tests of the running system: whatever uses the Docker engine (its sandboxes, pools, extra engines, `dockerd`
 * itself), a browser, several processes, the project's servers (Postgres, sshd, the registry), or a whole example.
 * They share one machine and engine, so they run one file at a time.
 */
const systemTests = [
  "**/*.docker.test.ts",
  "**/*.e2e.test.ts",
  "tests/**/*.test.ts",
  "tests/**/*.test.tsx",
  "examples/**/*.test.ts",
  "examples/**/*.test.tsx",
];
const tests = ["**/*.test.ts", "**/*.test.tsx"];
// tests/packaging/app is a user's app, tested by tests/packaging/packaging.test.ts where it is installed.
const excluded = ["**/node_modules/**", "**/dist/**", "tests/packaging/app/**"];

export default defineConfig({
  environments: { client: source, ssr: source, __vitest__: source },
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    projects: [
      {
        // The packages' own tests (no engine, no browser; their servers on loopback ports of their own) and the type
        // tests: two files at a time, before the system tests.
        extends: true,
        test: {
          name: "packages",
          include: tests,
          exclude: [...excluded, ...systemTests],
          typecheck: {
            enabled: true,
            include: ["**/*.test-d.ts", "**/*.test-d.tsx"],
            tsconfig: "./tsconfig.json",
          },
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "system",
          include: systemTests,
          exclude: excluded,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
          // The run's sandbox pool for `paiSandboxFixture` (examples/python-project, tests/sandbox-vitest). An app
          // names "@pai/sandbox/vitest/setup"; Vitest finds a globalSetup file with Node's conditions, so the repo
          // names the source.
          globalSetup: ["./capabilities/sandbox/src/vitest/setup.ts"],
        },
      },
    ],
  },
});
