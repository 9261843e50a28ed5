export type { FakeContainer, FakeDriver, FakeDriverCalls, FakeDriverOptions } from "./fake-driver.ts";
export { createFakeDriver } from "./fake-driver.ts";
