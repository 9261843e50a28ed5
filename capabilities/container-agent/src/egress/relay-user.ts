import { readFileSync } from "node:fs";
import { ContainerAgentError } from "../container-agent-error.ts";

/** Whom `pai-egress-relay` runs as once its socket listens: ids, or `"self"` to keep this process's. */
export type RelayUser = { uid: number; gid: number } | "self";

/** The ids of `name` in `/etc/passwd` (its primary group), if it is there. */
function passwdEntry(name: string): { uid: number; gid: number } | undefined {
  let passwd: string;
  try {
    passwd = readFileSync("/etc/passwd", "utf8");
  } catch {
    return undefined;
  }
  for (const line of passwd.split("\n")) {
    const [user, , uid, gid] = line.split(":");
    if (user === name && /^\d+$/.test(uid ?? "") && /^\d+$/.test(gid ?? "")) {
      return { uid: Number(uid), gid: Number(gid) };
    }
  }
  return undefined;
}

/**
 * Reads `PAI_EGRESS_RELAY_USER`: `self`, `<uid>:<gid>`, or a user name of `/etc/passwd`.
 * @throws ContainerAgentError `INVALID_ARGUMENT` for anything else
 */
function parseRelayUser(text: string): RelayUser {
  if (text === "self") return "self";
  const ids = /^(\d+):(\d+)$/.exec(text);
  if (ids) return { uid: Number(ids[1]), gid: Number(ids[2]) };
  const named = passwdEntry(text);
  if (named) return named;
  throw new ContainerAgentError(
    "INVALID_ARGUMENT",
    `PAI_EGRESS_RELAY_USER must be "self", "<uid>:<gid>" or a user of /etc/passwd, not "${text}"`,
  );
}

/**
 * Whom the relay becomes: `requested`, else `PAI_EGRESS_RELAY_USER`, else — when this process is root — `nobody`
 * (65534:65534 when /etc/passwd has none), else this process's own ids (only root can change them).
 */
export function resolveRelayUser(requested: RelayUser | undefined, env = process.env): RelayUser {
  if (requested !== undefined) return requested;
  const configured = env.PAI_EGRESS_RELAY_USER;
  if (configured) return parseRelayUser(configured);
  if ((process.getuid?.() ?? 0) !== 0) return "self";
  return passwdEntry("nobody") ?? { uid: 65534, gid: 65534 };
}

/** The relay's second argument: `<uid>:<gid>`, or `-` to keep its ids. */
export function relayUserArgument(user: RelayUser): string {
  return user === "self" ? "-" : `${user.uid}:${user.gid}`;
}
