export type { FakeDriver, FakeDriverOptions } from "./fake-driver.ts";
export { createFakeDriver } from "./fake-driver.ts";
export type { FakeContainer, FakeDriverCalls } from "./fake-engine.ts";
