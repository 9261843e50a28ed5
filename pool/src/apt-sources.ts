import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";

/** One enabled `deb` source: its URI (no trailing slash) and one suite. */
export interface AptSource {
  uri: string;
  suite: string;
}

/** Where a Debian root filesystem gets its packages, as this machine's apt would. */
export interface AptMirrors {
  /** The archive mirror, e.g. `http://deb.debian.org/debian`. */
  mirror: string;
  /** The security mirror; `""` for none. */
  security: string;
  /** apt settings of the host that the rootfs's apt needs too (a snapshot's expired `Valid-Until`, a proxy). */
  aptSettings: string;
}

/** The enabled `deb` sources of one file, in its one-line (`.list`) or deb822 (`.sources`) format. */
export function parseAptSources(text: string, format: "list" | "deb822"): AptSource[] {
  const found: AptSource[] = [];
  const add = (uri: string | undefined, suite: string | undefined) => {
    if (uri && suite) found.push({ uri: uri.replace(/\/+$/, ""), suite });
  };
  if (format === "list") {
    for (const raw of text.split("\n")) {
      const fields = raw
        .replace(/#.*/, "")
        .replace(/\[[^\]]*\]/, "")
        .trim()
        .split(/\s+/);
      if (fields[0] === "deb" && fields.length >= 3) add(fields[1], fields[2]);
    }
    return found;
  }
  // deb822: stanzas separated by blank lines; a stanza's Suites may list several.
  for (const stanza of text.split(/\n[ \t]*\n/)) {
    const field = (name: string) =>
      stanza
        .split("\n")
        .find((line) => !line.trimStart().startsWith("#") && line.startsWith(`${name}:`))
        ?.slice(name.length + 1)
        .trim();
    const types = field("Types") ?? "";
    if (!/(^|\s)deb(\s|$)/.test(types) || (field("Enabled") ?? "").toLowerCase() === "no") continue;
    const uri = (field("URIs") ?? "").split(/\s+/)[0];
    for (const suite of (field("Suites") ?? "").split(/\s+/)) add(uri, suite);
  }
  return found;
}

/** The enabled `deb` sources of this machine: sources.list, then sources.list.d's `.list` and `.sources` files. */
async function hostAptSources(): Promise<AptSource[]> {
  const read = (path: string) => readFile(path, "utf8").catch(() => undefined);
  const found: AptSource[] = [];
  const main = await read("/etc/apt/sources.list");
  if (main !== undefined) found.push(...parseAptSources(main, "list"));
  const names = (await readdir("/etc/apt/sources.list.d").catch(() => [] as string[])).sort();
  for (const [suffix, format] of [
    [".list", "list"],
    [".sources", "deb822"],
  ] as const) {
    for (const name of names.filter((each) => each.endsWith(suffix))) {
      const text = await read(join("/etc/apt/sources.list.d", name));
      if (text !== undefined) found.push(...parseAptSources(text, format));
    }
  }
  return found;
}

/**
 * Picks the mirrors of a Debian `suite` from `sources`: the archive is `PAI_DEBIAN_MIRROR`, else the source of
 * `suite`, else any Debian archive source (another release's mirror carries `suite` too), else deb.debian.org; the
 * security mirror is `PAI_DEBIAN_SECURITY` when set (even empty: none), else the source of `<suite>-security`, else
 * any `-security` one, else deb.debian.org's when the archive is deb.debian.org.
 */
export function pickAptMirrors(
  sources: readonly AptSource[],
  suite: string,
  env: Readonly<Record<string, string | undefined>>,
): { mirror: string; security: string } {
  const mirror =
    env.PAI_DEBIAN_MIRROR ||
    sources.find((source) => source.suite === suite)?.uri ||
    sources.find(
      (source) =>
        !source.suite.includes("-") && source.uri.includes("debian") && !source.uri.includes("security"),
    )?.uri ||
    "http://deb.debian.org/debian";
  let security = env.PAI_DEBIAN_SECURITY;
  if (security === undefined) {
    security =
      sources.find((source) => source.suite === `${suite}-security`)?.uri ||
      sources.find((source) => source.suite.endsWith("-security"))?.uri ||
      (/^https?:\/\/deb\.debian\.org\/debian$/.test(mirror)
        ? `${mirror.slice(0, -"/debian".length)}/debian-security`
        : "");
  }
  return { mirror, security };
}

/** This machine's mirrors of `suite` (see {@link pickAptMirrors}) and the apt settings a rootfs copies. */
export async function hostAptMirrors(options: {
  suite: string;
  env?: Readonly<Record<string, string | undefined>>;
  signal?: AbortSignal;
}): Promise<AptMirrors> {
  const picked = pickAptMirrors(await hostAptSources(), options.suite, options.env ?? process.env);
  const dump = await execa("apt-config", ["dump"], {
    reject: false,
    timeout: 10_000,
    ...(options.signal ? { cancelSignal: options.signal } : {}),
  });
  const aptSettings = dump.failed
    ? ""
    : dump.stdout
        .split("\n")
        .filter((line) => /^Acquire::(Check-Valid-Until|Check-Date|https?::Proxy) /.test(line))
        .join("\n");
  return { ...picked, aptSettings };
}
