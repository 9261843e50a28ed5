import { describe, expect, it } from "vitest";
import { ContainerAgentError } from "../container-agent-error.ts";
import { canonicalAddress, restrictedAddressClass } from "./address-class.ts";
import { parseEgressPolicy } from "./egress-policy.ts";

/** A resolver with fixed answers, so rebinding-style answers can be tested. */
function resolver(table: Record<string, string[]>) {
  return async (host: string) => {
    const addresses = table[host];
    if (!addresses) throw Object.assign(new Error(`ENOTFOUND ${host}`), { code: "ENOTFOUND" });
    return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
}

const lookup = resolver({
  "pypi.org": ["151.101.0.223"],
  "files.pythonhosted.org": ["151.101.1.63"],
  "rebind.example": ["10.0.0.7"],
  "mixed.example": ["10.0.0.7", "93.184.215.14"],
  localhost: ["127.0.0.1"],
  "metadata.example": ["169.254.169.254"],
  "v6.example": ["::ffff:192.168.1.1"],
});

describe("parseEgressPolicy", () => {
  it("allows listed names on ports 80 and 443, or the port the entry names", async () => {
    const policy = parseEgressPolicy(["pypi.org", "*.pythonhosted.org", "mirror.test:3141"], { lookup });
    expect(await policy.decide({ host: "pypi.org", port: 443 })).toEqual({
      decision: "allowed",
      addresses: ["151.101.0.223"],
    });
    expect(await policy.decide({ host: "PyPI.org.", port: 80 })).toMatchObject({ decision: "allowed" });
    expect(await policy.decide({ host: "files.pythonhosted.org", port: 443 })).toMatchObject({
      decision: "allowed",
    });
    expect(await policy.decide({ host: "pypi.org", port: 22 })).toEqual({
      decision: "refused",
      reason: "pai egress: pypi.org:22 refused: not in the allow list",
    });
    expect(await policy.decide({ host: "pythonhosted.org", port: 443 })).toMatchObject({
      decision: "refused",
    });
    expect(await policy.decide({ host: "example.com", port: 443 })).toMatchObject({
      decision: "refused",
      reason: "pai egress: example.com:443 refused: not in the allow list",
    });
  });

  it("decides by the resolved address: a listed name that resolves to a private address is refused", async () => {
    const policy = parseEgressPolicy(["*"], { lookup });
    expect(await policy.decide({ host: "rebind.example", port: 443 })).toEqual({
      decision: "refused",
      reason:
        'pai egress: rebind.example:443 refused: resolves to 10.0.0.7, a private address (only an allow entry naming exactly "rebind.example:443" reaches it)',
      address: "10.0.0.7",
    });
    // Only the public address of a mixed answer is handed to the proxy.
    expect(await policy.decide({ host: "mixed.example", port: 80 })).toEqual({
      decision: "allowed",
      addresses: ["93.184.215.14"],
    });
    expect(await policy.decide({ host: "metadata.example", port: 80 })).toMatchObject({
      reason: expect.stringContaining("the cloud metadata address"),
    });
    expect(await policy.decide({ host: "v6.example", port: 443 })).toMatchObject({
      decision: "refused",
      address: "192.168.1.1",
    });
    expect(await policy.decide({ host: "nowhere.example", port: 443 })).toMatchObject({
      reason: "pai egress: nowhere.example:443 refused: the name does not resolve (ENOTFOUND)",
    });
  });

  it("refuses loopback, private and metadata addresses unless an entry names that exact host:port", async () => {
    const open = parseEgressPolicy(["*:*", "127.0.0.0/8:*", "10.0.0.0/8"], { lookup });
    for (const host of [
      "127.0.0.1",
      "10.1.2.3",
      "169.254.169.254",
      "::1",
      "0.0.0.0",
      "224.0.0.1",
      "fe80::1",
    ]) {
      expect(await open.decide({ host, port: 80 }), host).toMatchObject({ decision: "refused" });
    }
    const exact = parseEgressPolicy(["127.0.0.1:3141", "localhost:8080", "[::1]:9000"], { lookup });
    expect(await exact.decide({ host: "127.0.0.1", port: 3141 })).toEqual({
      decision: "allowed",
      addresses: ["127.0.0.1"],
    });
    expect(await exact.decide({ host: "localhost", port: 8080 })).toMatchObject({ decision: "allowed" });
    expect(await exact.decide({ host: "::1", port: 9000 })).toMatchObject({ decision: "allowed" });
    // Another port, or the same address by another name, is not the entry.
    expect(await exact.decide({ host: "127.0.0.1", port: 3142 })).toMatchObject({ decision: "refused" });
    expect(await exact.decide({ host: "localhost", port: 3141 })).toMatchObject({ decision: "refused" });
    expect(await exact.decide({ host: "127.0.0.1", port: 8080 })).toMatchObject({
      reason:
        'pai egress: 127.0.0.1:8080 refused: a loopback address (only an allow entry naming exactly "127.0.0.1:8080" reaches it)',
    });
  });

  it("matches addresses and ranges, IPv6 included", async () => {
    const policy = parseEgressPolicy(["93.184.215.0/24", "[2606:2800::/32]:8443", "8.8.8.8:53"], { lookup });
    expect(await policy.decide({ host: "93.184.215.14", port: 443 })).toMatchObject({ decision: "allowed" });
    expect(await policy.decide({ host: "93.184.216.14", port: 443 })).toMatchObject({ decision: "refused" });
    expect(await policy.decide({ host: "2606:2800:220:1::1", port: 8443 })).toMatchObject({
      decision: "allowed",
    });
    expect(await policy.decide({ host: "8.8.8.8", port: 53 })).toMatchObject({ decision: "allowed" });
    expect(await policy.decide({ host: "mixed.example", port: 443 })).toMatchObject({
      decision: "allowed",
      addresses: ["93.184.215.14"],
    });
  });

  it("rejects malformed entries with a typed error naming the entry", () => {
    for (const entry of ["", "http://x.com", "x.com:99999", "1.2.3.0/33", "*.*", "[::1", "a b"]) {
      let caught: unknown;
      try {
        parseEgressPolicy([entry]);
      } catch (error) {
        caught = error;
      }
      expect(ContainerAgentError.hasCode(caught, "INVALID_ARGUMENT"), entry).toBe(true);
      expect((caught as Error).message).toContain(JSON.stringify(entry));
    }
  });
});

describe("restrictedAddressClass", () => {
  it("classifies special ranges and leaves public addresses alone", () => {
    expect(restrictedAddressClass("127.0.0.53")).toBe("loopback");
    expect(restrictedAddressClass("172.20.0.1")).toBe("private");
    expect(restrictedAddressClass("100.100.100.200")).toBe("metadata");
    expect(restrictedAddressClass("fd00:ec2::254")).toBe("metadata");
    expect(restrictedAddressClass("fc00::1")).toBe("private");
    expect(restrictedAddressClass("ff02::1")).toBe("multicast");
    expect(restrictedAddressClass("255.255.255.255")).toBe("reserved");
    expect(restrictedAddressClass("93.184.215.14")).toBeUndefined();
    expect(restrictedAddressClass("2606:2800:220:1::1")).toBeUndefined();
  });

  it("reads IPv4-mapped IPv6 addresses as the IPv4 address they are", () => {
    expect(canonicalAddress("::ffff:127.0.0.1")).toBe("127.0.0.1");
    expect(canonicalAddress("[0:0:0:0:0:ffff:7f00:1]")).toBe("127.0.0.1");
    expect(canonicalAddress("0:0:0:0:0:0:0:1")).toBe("::1");
    expect(canonicalAddress("example.com")).toBeUndefined();
  });
});
