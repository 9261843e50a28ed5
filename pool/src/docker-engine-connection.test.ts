import { afterEach, describe, expect, it, vi } from "vitest";
import { dockerEngineId, toDockerodeConnection } from "./docker-engine-connection.ts";

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("dockerEngineId", () => {
  it("names a socket, a TCP (TLS) and an SSH engine by address only, with default ports", () => {
    expect(dockerEngineId({ socketPath: "/run/pai-engine-1.sock" })).toBe("unix:///run/pai-engine-1.sock");
    expect(dockerEngineId({ host: "10.0.0.5", ca: "CA", cert: "CERT", key: "SECRET KEY" })).toBe(
      "tcp://10.0.0.5:2376",
    );
    expect(dockerEngineId({ host: "10.0.0.5", port: 2375, protocol: "http" })).toBe("tcp://10.0.0.5:2375");
    const ssh = dockerEngineId({
      host: "runner-2",
      protocol: "ssh",
      username: "pai",
      sshOptions: { privateKey: "SECRET KEY", passphrase: "SECRET" },
    });
    expect(ssh).toBe("ssh://pai@runner-2:22");
  });

  it("names the engine of DOCKER_HOST when no connection option is set", () => {
    vi.stubEnv("DOCKER_HOST", "");
    expect(dockerEngineId()).toBe("unix:///var/run/docker.sock");
    vi.stubEnv("DOCKER_HOST", "tcp://127.0.0.1:2375");
    expect(dockerEngineId({})).toBe("tcp://127.0.0.1:2375");
  });
});

describe("toDockerodeConnection", () => {
  it("lets an explicit socket override every part of DOCKER_HOST", () => {
    const options = toDockerodeConnection({ socketPath: "/run/pai-engine-2.sock" });
    expect(options).toMatchObject({ socketPath: "/run/pai-engine-2.sock" });
    // Present and undefined: dockerode's defaults (read from DOCKER_HOST) are overwritten.
    expect("host" in options && options.host === undefined).toBe(true);
    expect("protocol" in options && options.protocol === undefined).toBe(true);
  });

  it("passes TLS material and SSH settings through with the resolved protocol and port", () => {
    expect(toDockerodeConnection({ host: "h", ca: "CA", cert: "C", key: "K" })).toMatchObject({
      host: "h",
      port: 2376,
      protocol: "https",
      ca: "CA",
      cert: "C",
      key: "K",
    });
    const agent = "/run/ssh-agent.sock";
    expect(
      toDockerodeConnection({ host: "h", protocol: "ssh", username: "u", sshOptions: { agent } }),
    ).toMatchObject({ host: "h", port: 22, protocol: "ssh", username: "u", sshOptions: { agent } });
  });

  it("leaves everything to the environment when no socket or host is given", () => {
    vi.stubEnv("DOCKER_HOST", "tcp://127.0.0.1:2375");
    expect(toDockerodeConnection({})).toEqual({});
    expect(toDockerodeConnection({ version: "v1.41" })).toEqual({ version: "v1.41" });
  });

  it("reads an ssh:// DOCKER_HOST itself, with the agent of SSH_AUTH_SOCK, unless a socket or host is given", () => {
    vi.stubEnv("DOCKER_HOST", "ssh://pai@runner-2:2222");
    vi.stubEnv("SSH_AUTH_SOCK", "/run/agent.sock");
    expect(toDockerodeConnection({ version: "v1.41" })).toMatchObject({
      host: "runner-2",
      port: 2222,
      protocol: "ssh",
      username: "pai",
      sshOptions: { agent: "/run/agent.sock" },
      version: "v1.41",
    });
    vi.stubEnv("DOCKER_HOST", "ssh://[::1]");
    vi.stubEnv("SSH_AUTH_SOCK", "");
    const bare = toDockerodeConnection({});
    expect(bare).toMatchObject({ host: "::1", port: 22, protocol: "ssh" });
    expect(bare.sshOptions).toBeUndefined();
    expect(toDockerodeConnection({ socketPath: "/run/x.sock" })).toMatchObject({ protocol: undefined });
  });

  it("rejects an ssh:// DOCKER_HOST without a host", () => {
    vi.stubEnv("DOCKER_HOST", "ssh://");
    expect(() => toDockerodeConnection({})).toThrow(TypeError);
  });
});
