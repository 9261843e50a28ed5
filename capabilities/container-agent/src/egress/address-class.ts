import { BlockList, isIP } from "node:net";
import { networkInterfaces } from "node:os";

/** Why an address is refused unless an allow entry names it exactly. */
export type RestrictedAddressClass =
  | "loopback"
  | "private"
  | "link-local"
  | "multicast"
  | "metadata"
  | "unspecified"
  | "reserved"
  | "host";

function list(entries: ReadonlyArray<[string, number]>): BlockList {
  const blocks = new BlockList();
  for (const [network, prefix] of entries)
    blocks.addSubnet(network, prefix, isIP(network) === 6 ? "ipv6" : "ipv4");
  return blocks;
}

/** Cloud metadata services (AWS, GCP, Azure, OpenStack: 169.254.169.254; AWS IPv6; Alibaba). */
const METADATA = new Set(["169.254.169.254", "fd00:ec2::254", "100.100.100.200"]);

const CLASSES: ReadonlyArray<[RestrictedAddressClass, BlockList]> = [
  [
    "unspecified",
    list([
      ["0.0.0.0", 8],
      ["::", 128],
    ]),
  ],
  [
    "loopback",
    list([
      ["127.0.0.0", 8],
      ["::1", 128],
    ]),
  ],
  [
    "private",
    list([
      ["10.0.0.0", 8],
      ["172.16.0.0", 12],
      ["192.168.0.0", 16],
      ["100.64.0.0", 10], // carrier-grade NAT, shared address space
      ["fc00::", 7], // unique local
    ]),
  ],
  [
    "link-local",
    list([
      ["169.254.0.0", 16],
      ["fe80::", 10],
    ]),
  ],
  [
    "multicast",
    list([
      ["224.0.0.0", 4],
      ["ff00::", 8],
    ]),
  ],
  [
    "reserved",
    list([
      ["192.0.0.0", 24],
      ["192.0.2.0", 24],
      ["198.18.0.0", 15],
      ["198.51.100.0", 24],
      ["203.0.113.0", 24],
      ["240.0.0.0", 4], // includes 255.255.255.255
      ["64:ff9b::", 96], // NAT64: may embed any IPv4 address
      ["64:ff9b:1::", 48],
      ["100::", 64],
      ["2001:db8::", 32],
      ["2002::", 16], // 6to4: may embed any IPv4 address
    ]),
  ],
];

/**
 * An address in its canonical text form, IPv4-mapped IPv6 (`::ffff:127.0.0.1`) as the IPv4 address it is;
 * `undefined` when `text` is not an IP address.
 */
export function canonicalAddress(text: string): string | undefined {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const family = isIP(bare);
  if (family === 4) return bare;
  if (family !== 6) return undefined;
  // URL prints the shortest form, and IPv4-mapped addresses as ::ffff:hhhh:hhhh.
  const shortest = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(shortest);
  if (!mapped) return shortest;
  const high = Number.parseInt(mapped[1]!, 16);
  const low = Number.parseInt(mapped[2]!, 16);
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join(".");
}

/** The host's own addresses (every interface), as canonical text. */
function hostAddresses(): Set<string> {
  const own = new Set<string>();
  for (const entries of Object.values(networkInterfaces())) {
    for (const entry of entries ?? []) {
      const address = canonicalAddress(entry.address.split("%")[0]!);
      if (address) own.add(address);
    }
  }
  return own;
}

/**
 * Whether `address` (canonical, see {@link canonicalAddress}) is one PAI refuses unless an allow entry names
 * it exactly: loopback, private, link-local, multicast, the cloud metadata addresses, unspecified, reserved
 * ranges, and the host's own addresses. `undefined` for an ordinary public address.
 */
export function restrictedAddressClass(address: string): RestrictedAddressClass | undefined {
  if (METADATA.has(address)) return "metadata";
  const family = isIP(address) === 6 ? "ipv6" : "ipv4";
  for (const [name, blocks] of CLASSES) if (blocks.check(address, family)) return name;
  if (hostAddresses().has(address)) return "host";
  return undefined;
}
