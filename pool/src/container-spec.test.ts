import { describe, expect, it } from "vitest";
import { resolveContainerSpec } from "./container-spec.ts";
import { toCreateBody } from "./docker-create-body.ts";

const disk = { diskVolumeDriver: "pai-disk", diskId: "d1" };

describe("limits.diskBytes", () => {
  it("defaults to 2 GiB, accepts null for unbounded volumes and refuses a disk too small for a filesystem", () => {
    expect(resolveContainerSpec({ image: "x" }).limits.diskBytes).toBe(2 * 1024 ** 3);
    expect(resolveContainerSpec({ image: "x", limits: { diskBytes: null } }).limits.diskBytes).toBeNull();
    expect(() => resolveContainerSpec({ image: "x", limits: { diskBytes: 1024 } })).toThrow(RangeError);
    expect(() => resolveContainerSpec({ image: "x", limits: { diskBytes: 1.5 } })).toThrow(RangeError);
  });

  it("puts every writable path on one disk of the container, each in its own directory", () => {
    const body = toCreateBody({ image: "x", limits: { diskBytes: 64 * 1024 ** 2 } }, {}, disk);
    expect(body.HostConfig?.Mounts).toEqual([
      {
        Type: "volume",
        Target: "/workspace",
        VolumeOptions: {
          DriverConfig: { Name: "pai-disk", Options: { size: "67108864", disk: "d1", dir: "0-workspace" } },
        },
      },
      {
        Type: "volume",
        Target: "/tmp",
        VolumeOptions: {
          DriverConfig: { Name: "pai-disk", Options: { size: "67108864", disk: "d1", dir: "1-tmp" } },
        },
      },
    ]);
  });

  it("keeps plain local volumes without a disk bound", () => {
    const body = toCreateBody({ image: "x", limits: { diskBytes: null } }, {}, disk);
    expect(body.HostConfig?.Mounts).toEqual([
      { Type: "volume", Target: "/workspace" },
      { Type: "volume", Target: "/tmp" },
    ]);
  });
});

describe("runtime", () => {
  it("uses the spec's runtime, else the driver's choice, else none (the engine's default)", () => {
    const runtimeOf = (spec: { runtime?: string }, runtime?: string) =>
      toCreateBody({ image: "x", ...spec }, {}, { ...disk, runtime }).HostConfig?.Runtime;
    expect(runtimeOf({ runtime: "runc" }, "crun")).toBe("runc");
    expect(runtimeOf({}, "crun")).toBe("crun");
    expect(runtimeOf({})).toBeUndefined();
    expect(() => resolveContainerSpec({ image: "x", runtime: "../crun" })).toThrow(TypeError);
  });
});

describe("network none", () => {
  it("skips the engine's network setup and mounts the hosts file when the driver has one", () => {
    const body = toCreateBody(
      { image: "x", limits: { diskBytes: null } },
      {},
      { ...disk, hostsFile: "/h/hosts" },
    );
    expect(body.NetworkDisabled).toBe(true);
    expect(body.HostConfig?.NetworkMode).toBe("none");
    expect(body.HostConfig?.Mounts).toContainEqual({
      Type: "bind",
      Source: "/h/hosts",
      Target: "/etc/hosts",
      ReadOnly: true,
    });
    const host = toCreateBody({ image: "x", network: "host" }, {}, { ...disk, hostsFile: "/h/hosts" });
    expect(host.NetworkDisabled).toBeUndefined();
    expect(toCreateBody({ image: "x" }, {}, disk).NetworkDisabled).toBeUndefined();
  });
});

describe("hostDirectories", () => {
  it("bind-mounts each read-only, leaves specs without any hashed as before and refuses relative paths", () => {
    const body = toCreateBody(
      { image: "x", limits: { diskBytes: null }, hostDirectories: [{ source: "/run/s", target: "/run/t" }] },
      {},
      disk,
    );
    expect(body.HostConfig?.Mounts).toContainEqual({
      Type: "bind",
      Source: "/run/s",
      Target: "/run/t",
      ReadOnly: true,
    });
    expect(resolveContainerSpec({ image: "x", hostDirectories: [] })).not.toHaveProperty("hostDirectories");
    expect(() =>
      resolveContainerSpec({ image: "x", hostDirectories: [{ source: "run/s", target: "/t" }] }),
    ).toThrow(TypeError);
  });
});

describe("capabilities", () => {
  it("keeps only the ones named, sorted and once each, and leaves specs without any hashed as before", () => {
    const body = toCreateBody(
      { image: "x", user: "0:0", capabilities: ["SETUID", "KILL", "SETUID"] },
      {},
      disk,
    );
    expect(body.User).toBe("0:0");
    expect(body.HostConfig?.CapDrop).toEqual(["ALL"]);
    expect(body.HostConfig?.CapAdd).toEqual(["KILL", "SETUID"]);
    expect(toCreateBody({ image: "x" }, {}, disk).HostConfig?.CapAdd).toBeUndefined();
    expect(resolveContainerSpec({ image: "x", capabilities: [] })).not.toHaveProperty("capabilities");
    expect(() =>
      resolveContainerSpec({ image: "x", capabilities: ["SYS_ADMIN" as unknown as "KILL"] }),
    ).toThrow(TypeError);
  });
});
