import { describe, expect, it } from "vitest";
import { resolveContainerSpec } from "./container-spec.ts";
import { specHash } from "./spec-hash.ts";

describe("specHash", () => {
  it("is 12 hex digits and ignores how defaults and keys are spelled", () => {
    const short = specHash({ image: "pai/sandbox:latest" });
    expect(short).toMatch(/^[0-9a-f]{12}$/);
    expect(specHash(resolveContainerSpec({ image: "pai/sandbox:latest" }))).toBe(short);
    expect(specHash({ limits: { pidsLimit: 256 }, image: "pai/sandbox:latest", network: "none" })).toBe(
      short,
    );
  });

  it("changes with anything that changes the container", () => {
    const base = specHash({ image: "pai/sandbox:latest" });
    expect(specHash({ image: "pai/sandbox:other" })).not.toBe(base);
    expect(specHash({ image: "pai/sandbox:latest", limits: { memoryBytes: 1024 ** 3 } })).not.toBe(base);
    expect(specHash({ image: "pai/sandbox:latest", network: "host" })).not.toBe(base);
    expect(specHash({ image: "pai/sandbox:latest", env: { A: "1" } })).not.toBe(base);
  });

  it("fills the secure defaults", () => {
    expect(resolveContainerSpec({ image: "x" })).toMatchObject({
      cmd: ["sleep", "infinity"],
      user: "1000:1000",
      workingDir: "/workspace",
      network: "none",
      readOnlyRootfs: true,
      writablePaths: ["/workspace", "/tmp"],
      limits: { memoryBytes: 512 * 1024 * 1024, nanoCpus: 1e9, pidsLimit: 256 },
    });
    expect(() => resolveContainerSpec({ image: "x", labels: { "pai.pool": "x" } })).toThrow(TypeError);
    expect(() => resolveContainerSpec({ image: "x", writablePaths: ["tmp"] })).toThrow(TypeError);
  });
});
