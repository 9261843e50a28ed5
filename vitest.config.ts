import { defineConfig } from "vitest/config";

// The repo runs the packages' sources: every `@pai/*` export has an `@pai/source` condition naming its `src/*.ts`
// (what is published points at `dist/` only). Vitest resolves with it in every environment, and so does every Node
// process a test starts (NODE_OPTIONS is inherited), so no test needs a build.
const source = { resolve: { conditions: ["@pai/source"] } };
const sourceCondition = "--conditions=@pai/source";
if (!process.env.NODE_OPTIONS?.includes(sourceCondition)) {
  process.env.NODE_OPTIONS = [process.env.NODE_OPTIONS, sourceCondition].filter(Boolean).join(" ");
}

export default defineConfig({
  environments: { client: source, ssr: source, __vitest__: source },
  test: {
    include: ["**/*.test.ts", "**/*.test.tsx"],
    // tests/packaging/app is a user's app, tested by tests/packaging/packaging.test.ts where it is installed.
    exclude: ["**/node_modules/**", "**/dist/**", "tests/packaging/app/**"],
    typecheck: { enabled: true, include: ["**/*.test-d.ts", "**/*.test-d.tsx"], tsconfig: "./tsconfig.json" },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // The run's sandbox pool for `paiSandboxFixture` (examples/python-project, tests/sandbox-vitest). An app names
    // "@pai/sandbox/vitest/setup"; Vitest finds a globalSetup file with Node's conditions, so the repo names the source.
    globalSetup: ["./capabilities/sandbox/src/vitest/setup.ts"],
  },
});
