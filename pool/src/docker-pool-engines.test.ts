import { afterEach, describe, expect, it, vi } from "vitest";
import { dockerPoolEngines } from "./docker-pool-engines.ts";

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("dockerPoolEngines", () => {
  it("marks engines reached over SSH as remote, and no other", () => {
    const engines = dockerPoolEngines({
      engines: [
        { id: "local", socketPath: "/run/pai-engine-1.sock" },
        { id: "tls", host: "127.0.0.1", port: 23751, ca: "CA", cert: "C", key: "K" },
        { id: "ssh", host: "127.0.0.1", port: 2222, protocol: "ssh", username: "root" },
      ],
    });
    expect(engines.map((engine) => [engine.id, engine.remote ?? false])).toEqual([
      ["local", false],
      ["tls", false],
      ["ssh", true],
    ]);
  });

  it("marks the engine of an ssh:// DOCKER_HOST as remote", () => {
    vi.stubEnv("DOCKER_HOST", "ssh://root@127.0.0.1:2222");
    expect(dockerPoolEngines({})).toMatchObject([{ id: "ssh://root@127.0.0.1:2222", remote: true }]);
    vi.stubEnv("DOCKER_HOST", "unix:///var/run/docker.sock");
    expect(dockerPoolEngines({})[0]?.remote).toBeUndefined();
  });
});
