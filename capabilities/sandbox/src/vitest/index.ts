export type { PaiSandboxFixtureOptions, PaiSandboxPoolOptions } from "./fixture-options.ts";
export { paiSandboxFixture } from "./pai-sandbox-fixture.ts";
export type { SandboxPoolAddress } from "./sandbox-pool-server.ts";
