export { createTestSandbox, type TestSandbox, type TestSandboxOptions } from "./create-test-sandbox.ts";
