import { lookup as dnsLookup, Resolver } from "node:dns/promises";
import { BlockList, isIP } from "node:net";
import { ContainerAgentError } from "../container-agent-error.ts";
import { canonicalAddress, type RestrictedAddressClass, restrictedAddressClass } from "./address-class.ts";

/**
 * Where a container may connect through PAI's egress proxy. Each entry is one of:
 *
 * - `example.com` — that host name; `*.example.com` — any name below it (not `example.com` itself);
 *   `*` — any host name or address.
 * - `203.0.113.7`, `[2001:db8::7]` — that address; `203.0.113.0/24`, `2001:db8::/32` — a range.
 * - Any of those with `:port` (`pypi.org:443`, `127.0.0.1:3141`) or `:*` (every port). Without a port an entry
 *   allows ports 80 and 443.
 *
 * Names are resolved on the host and each connection is decided by the address it resolved to (so DNS
 * rebinding cannot get around the list). Loopback, private, link-local, multicast, cloud-metadata,
 * reserved and the host's own addresses are refused even when an entry matches, unless an entry names that
 * exact `host:port` as the program asked for it (`127.0.0.1:3141`, `localhost:8080`): that is how a local
 * mirror or a test server is reached.
 */
export type EgressAllowEntry = string;

/** What the program asked to reach. */
export interface EgressTarget {
  /** A host name or an IP address (IPv6 without brackets). */
  host: string;
  port: number;
}

/** A policy's verdict on one connection. */
export type EgressDecision =
  | {
      decision: "allowed";
      /** The addresses the policy allows for the target, in the resolver's order: connect to these only. */
      addresses: string[];
    }
  | {
      decision: "refused";
      /** One line, for the program (proxy status line and body) and the app's events. */
      reason: string;
      /** The address the refusal is about, when the name resolved. */
      address?: string;
    };

/** A parsed allow list; see {@link parseEgressPolicy}. */
export interface EgressPolicy {
  /** The entries as given. */
  readonly allow: readonly EgressAllowEntry[];
  /** Hosts (names and addresses) that an entry names with an exact port, e.g. `127.0.0.1` for `127.0.0.1:3141`. */
  readonly exactHosts: readonly string[];
  /** Resolves `target` on the host (unless it is an address) and decides by the address. */
  decide(target: EgressTarget, options?: { signal?: AbortSignal | undefined }): Promise<EgressDecision>;
}

type HostPattern =
  | { kind: "any" }
  | { kind: "name"; name: string }
  | { kind: "suffix"; suffix: string }
  | { kind: "address"; address: string }
  | { kind: "range"; blocks: BlockList; family: "ipv4" | "ipv6" };

interface Rule {
  host: HostPattern;
  /** A port, every port, or 80 and 443. */
  port: number | "any" | "web";
}

const NAME =
  /^(?=.{1,253}$)(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

function bad(entry: string, why: string): ContainerAgentError {
  return new ContainerAgentError("INVALID_ARGUMENT", `network.allow entry ${JSON.stringify(entry)}: ${why}`, {
    details: { entry },
  });
}

function parsePort(entry: string, text: string): number | "any" {
  if (text === "*") return "any";
  const port = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!(port >= 1 && port <= 65535)) throw bad(entry, `invalid port ${JSON.stringify(text)}`);
  return port;
}

function parseRange(entry: string, text: string): HostPattern {
  const [network = "", bits = ""] = text.split("/");
  const family = isIP(network);
  const prefix = /^\d{1,3}$/.test(bits) ? Number(bits) : Number.NaN;
  if (family === 0 || !(prefix >= 0 && prefix <= (family === 4 ? 32 : 128))) {
    throw bad(entry, "not an address range (a.b.c.d/n or an IPv6 prefix)");
  }
  const blocks = new BlockList();
  const name = family === 4 ? "ipv4" : "ipv6";
  blocks.addSubnet(network, prefix, name);
  return { kind: "range", blocks, family: name };
}

function parseHost(entry: string, text: string): HostPattern {
  if (text === "*") return { kind: "any" };
  if (text.includes("/")) return parseRange(entry, text);
  const address = canonicalAddress(text);
  if (address) return { kind: "address", address };
  if (text.startsWith("*.")) {
    const suffix = text.slice(2);
    if (!NAME.test(suffix)) throw bad(entry, "not a host name after *.");
    return { kind: "suffix", suffix };
  }
  if (!NAME.test(text)) throw bad(entry, "not a host name, address or range");
  return { kind: "name", name: text };
}

function parseRule(entry: string): Rule {
  if (typeof entry !== "string" || entry.trim() === "")
    throw bad(String(entry), "must be a non-empty string");
  const text = entry.trim().toLowerCase().replace(/\.$/, "");
  if (text.startsWith("[")) {
    const close = text.indexOf("]");
    if (close < 0) throw bad(entry, "unclosed [");
    const rest = text.slice(close + 1);
    if (rest !== "" && !rest.startsWith(":")) throw bad(entry, "expected :port after ]");
    const host = parseHost(entry, text.slice(1, close));
    if (host.kind !== "address" && host.kind !== "range") throw bad(entry, "[...] holds an IPv6 address");
    return { host, port: rest === "" ? "web" : parsePort(entry, rest.slice(1)) };
  }
  // A bare IPv6 address or prefix has several colons and no port.
  if ((text.match(/:/g) ?? []).length > 1) return { host: parseHost(entry, text), port: "web" };
  const colon = text.lastIndexOf(":");
  if (colon < 0) return { host: parseHost(entry, text), port: "web" };
  return { host: parseHost(entry, text.slice(0, colon)), port: parsePort(entry, text.slice(colon + 1)) };
}

function portMatches(rule: Rule, port: number): boolean {
  return rule.port === "any" || (rule.port === "web" ? port === 80 || port === 443 : rule.port === port);
}

function nameMatches(pattern: HostPattern, name: string): boolean {
  switch (pattern.kind) {
    case "any":
      return true;
    case "name":
      return pattern.name === name;
    case "suffix":
      return name.endsWith(`.${pattern.suffix}`);
    default:
      return false;
  }
}

function addressMatches(pattern: HostPattern, address: string): boolean {
  switch (pattern.kind) {
    case "any":
      return true;
    case "address":
      return pattern.address === address;
    case "range":
      return pattern.blocks.check(address, isIP(address) === 6 ? "ipv6" : "ipv4");
    default:
      return false;
  }
}

const CLASS_WORDS: Record<RestrictedAddressClass, string> = {
  loopback: "a loopback address",
  private: "a private address",
  "link-local": "a link-local address",
  multicast: "a multicast address",
  metadata: "the cloud metadata address",
  unspecified: "an unspecified address",
  reserved: "a reserved address",
  host: "one of the host's own addresses",
};

function restrictedReason(restricted: RestrictedAddressClass, label: string): string {
  return `${CLASS_WORDS[restricted]} (only an allow entry naming exactly "${label}" reaches it)`;
}

/** `host:port`, IPv6 hosts in brackets. */
export function formatTarget(target: EgressTarget): string {
  return `${target.host.includes(":") ? `[${target.host}]` : target.host}:${target.port}`;
}

/**
 * Parses an allow list (see {@link EgressAllowEntry}); a malformed entry is a `ContainerAgentError` `INVALID_ARGUMENT`
 * naming it. The policy's `decide` resolves names with the host's resolver (`dns.lookup`, so `/etc/hosts`
 * counts) and answers with the addresses to connect to — the proxy connects to exactly those.
 *
 * @example
 * const policy = parseEgressPolicy(["pypi.org", "files.pythonhosted.org", "127.0.0.1:3141"]);
 * await policy.decide({ host: "pypi.org", port: 443 }); // { decision: "allowed", addresses: ["151.101.0.223"] }
 */
export function parseEgressPolicy(
  allow: readonly EgressAllowEntry[],
  options: {
    /**
     * The resolver. @default names an entry gives with an exact port (`localhost:8080`, a mirror in `/etc/hosts`)
     * through the system's (`dns.lookup`); every other name through DNS queries (c-ares: A and AAAA, 3 s, two
     * tries), so names a program picks never hold the host's thread pool
     */
    lookup?: (host: string) => Promise<Array<{ address: string; family: number }>>;
  } = {},
): EgressPolicy {
  if (!Array.isArray(allow))
    throw new ContainerAgentError("INVALID_ARGUMENT", "network.allow must be an array of strings");
  const rules = allow.map(parseRule);
  const exactNames = new Set(
    rules.flatMap((rule) =>
      typeof rule.port === "number" && rule.host.kind === "name" ? [rule.host.name] : [],
    ),
  );
  const resolver = new Resolver({ timeout: 3_000, tries: 2 });
  const lookup =
    options.lookup ??
    (async (host: string) => {
      if (exactNames.has(host)) return dnsLookup(host, { all: true, verbatim: true });
      const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
      const addresses = [
        ...(v4.status === "fulfilled" ? v4.value.map((address) => ({ address, family: 4 })) : []),
        ...(v6.status === "fulfilled" ? v6.value.map((address) => ({ address, family: 6 })) : []),
      ];
      if (addresses.length === 0 && v4.status === "rejected") throw v4.reason;
      return addresses;
    });

  async function decide(
    target: EgressTarget,
    decideOptions: { signal?: AbortSignal | undefined } = {},
  ): Promise<EgressDecision> {
    const label = formatTarget(target);
    const refuse = (reason: string, address?: string): EgressDecision => ({
      decision: "refused",
      reason: `pai egress: ${label} refused: ${reason}`,
      ...(address !== undefined ? { address } : {}),
    });
    if (!Number.isInteger(target.port) || target.port < 1 || target.port > 65535) {
      return refuse("invalid port");
    }
    const host = target.host.toLowerCase().replace(/\.$/, "");
    const literal = canonicalAddress(host);
    if (!literal && !NAME.test(host)) return refuse("not a host name or address");
    const rulesForPort = rules.filter((rule) => portMatches(rule, target.port));
    const exact = rulesForPort.some(
      (rule) =>
        typeof rule.port === "number" &&
        ((rule.host.kind === "name" && !literal && rule.host.name === host) ||
          (rule.host.kind === "address" && literal !== undefined && rule.host.address === literal)),
    );
    const byName = !literal && rulesForPort.some((rule) => nameMatches(rule.host, host));
    const byAddressRules = rulesForPort.filter(
      (rule) => rule.host.kind !== "name" && rule.host.kind !== "suffix",
    );
    if (!exact && !byName && byAddressRules.length === 0) {
      const restricted = literal ? restrictedAddressClass(literal) : undefined;
      return restricted
        ? refuse(restrictedReason(restricted, label), literal)
        : refuse("not in the allow list");
    }

    let addresses: string[];
    if (literal) {
      addresses = [literal];
    } else {
      decideOptions.signal?.throwIfAborted();
      try {
        addresses = (await lookup(host))
          .map((entry) => canonicalAddress(entry.address))
          .filter((address): address is string => address !== undefined);
      } catch (error) {
        const code = (error as { code?: string }).code ?? "lookup failed";
        return refuse(`the name does not resolve (${code})`);
      }
      if (addresses.length === 0) return refuse("the name does not resolve");
    }
    let firstRefusal: EgressDecision | undefined;
    const allowed: string[] = [];
    for (const address of addresses) {
      const restricted = restrictedAddressClass(address);
      const listed = byName || byAddressRules.some((rule) => addressMatches(rule.host, address));
      if (exact || (!restricted && listed)) {
        allowed.push(address);
        continue;
      }
      firstRefusal ??= restricted
        ? refuse(
            `${literal ? "" : `resolves to ${address}, `}${restrictedReason(restricted, label)}`,
            address,
          )
        : refuse(`${literal ? "" : `resolves to ${address}, which is `}not in the allow list`, address);
    }
    if (allowed.length > 0) return { decision: "allowed", addresses: allowed };
    return firstRefusal ?? refuse("not in the allow list");
  }

  const exactHosts = rules.flatMap((rule) =>
    typeof rule.port === "number" && (rule.host.kind === "name" || rule.host.kind === "address")
      ? [rule.host.kind === "name" ? rule.host.name : rule.host.address]
      : [],
  );
  return { allow: [...allow], exactHosts: [...new Set(exactHosts)], decide };
}
